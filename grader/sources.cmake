# The grader's sources, listed once for both front ends (wb-grader on the GPU, wb-grader-emu on the
# CPU emulator). A lesson's own grader code is found from its folder, grader/lessons/NN-slug/:
# every .cu and .cpp there is part of its plan, except remote.cu (remote grading, GPU only).
set(_g ${CMAKE_CURRENT_LIST_DIR})

# No CUDA in these: built once, into wb-engine-core.
set(WB_CORE_SOURCES
  ${_g}/report/run_report.cpp ${_g}/report/failure_summary.cpp ${_g}/report/compare_report.cpp
  ${_g}/report/guard_report.cpp
  ${_g}/launch/launch_diagnosis.cpp
  ${_g}/engine/lesson_registry.cpp ${_g}/engine/submission.cpp ${_g}/app/case_names.cpp)

# The case engine: host code that runs cases, and the device code that checks their outputs.
set(WB_ENGINE_HOST_SOURCES ${_g}/engine/correctness_runner.cpp ${_g}/launch/launch_recorder.cpp)
set(WB_ENGINE_DEVICE_SOURCES
  ${_g}/engine/gpu_case.cu ${_g}/engine/l2_clear.cu ${_g}/engine/gpu_checks.cu ${_g}/engine/launch_guard.cu
  ${_g}/engine/device_tensor.cu)
set(WB_ENGINE_SOURCES ${WB_ENGINE_HOST_SOURCES} ${WB_ENGINE_DEVICE_SOURCES})

# GPU only: launch interception (hooks exported to the submissions' libraries) and fenced tensors.
set(WB_LAUNCH_GPU_SOURCES ${_g}/launch/launch_hooks.cpp ${_g}/engine/fenced_memory.cu)
set(WB_BENCH_SOURCES ${_g}/bench/bench_runner.cpp ${_g}/bench/gate_reason.cpp ${_g}/bench/clock_sampler.cpp)
set(WB_REMOTE_SOURCES
  ${_g}/remote/remote_channel.cpp ${_g}/remote/shared_buffers.cu ${_g}/remote/remote_student.cu
  ${_g}/remote/remote_registry.cpp ${_g}/remote/submission_host.cu ${_g}/remote/stream_gate.cu
  ${_g}/remote/batch_watchdog.cpp ${_g}/remote/remote_trace.cpp)

# Every lesson's plan, found from its folder; the plans shared by several lessons in lessons/common.
file(GLOB WB_LESSON_SOURCES CONFIGURE_DEPENDS ${_g}/lessons/*/*.cu ${_g}/lessons/*/*.cpp)
file(GLOB WB_LESSON_REMOTE_SOURCES CONFIGURE_DEPENDS ${_g}/lessons/*/remote.cu)
list(REMOVE_ITEM WB_LESSON_SOURCES ${WB_LESSON_REMOTE_SOURCES})
set(WB_LESSON_DEVICE_SOURCES ${WB_LESSON_SOURCES})
list(FILTER WB_LESSON_DEVICE_SOURCES INCLUDE REGEX "\\.cu$")
set(WB_LESSON_HOST_SOURCES ${WB_LESSON_SOURCES})
list(FILTER WB_LESSON_HOST_SOURCES INCLUDE REGEX "\\.cpp$")
