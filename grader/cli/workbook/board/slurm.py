"""A Slurm job array whose tasks each grade one submission into a signed record, merged afterwards."""


def job_script(lesson, root, folder, result_dir, count, gpu=True, options=()):
    """The job array's script; `options` are the board's own (limits, sandbox), passed on to every task."""
    passed = "".join(f" {o}" for o in options)
    gres = "#SBATCH --gres=gpu:1\n" if gpu else ""
    return f"""#!/bin/bash
#SBATCH --job-name={lesson.name}-leaderboard
#SBATCH --array=0-{count - 1}
{gres}#SBATCH --time=00:30:00
#SBATCH --output={result_dir}/slurm-%A_%a.out
# One task grades one submission into a signed record; merge them afterwards with:
#   ./grade leaderboard merge {lesson.name} {result_dir}
cd {root}
./grade leaderboard {lesson.name} {folder} --only "$SLURM_ARRAY_TASK_ID" --result-dir {result_dir}{passed}
"""
