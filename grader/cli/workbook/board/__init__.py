"""The instructors' leaderboard, in parts a reader can find by name:
sandbox (running untrusted code with limits), result_store (signed results and the cache),
grading (building and grading one submission), gpu_guard (other processes on the GPU),
ranking, exports, slurm."""
