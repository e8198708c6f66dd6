# A submission is one file compiled with the grader's adapter into its own shared library,
# which the grader opens privately. Lesson 1 is plain C++ whatever the file's extension.
set(WORKBOOK_ADAPTER_CU ${CMAKE_SOURCE_DIR}/grader/adapters/submission_adapter.cu)
set(WORKBOOK_ADAPTER_CPP ${CMAKE_SOURCE_DIR}/grader/adapters/submission_adapter.cpp)

# The recipe, in every place that compiles a submission (here, grader/cli/workbook/build.py for the GPU
# and grader/cli/workbook/emulated.py for the CPU emulator): the adapter for the lesson's kind, the
# public headers (grader/include) and the grader folder on the include path, and three definitions:
# the lesson's number, the submission's path, and the lesson's table (grader/lessons/NN-slug/api.h).

# workbook_add_submission(<target> <lesson> <slug> <source>)
function(workbook_add_submission target lesson slug source)
  if(lesson EQUAL 1)
    add_library(${target} MODULE ${WORKBOOK_ADAPTER_CPP})
  else()
    add_library(${target} MODULE ${WORKBOOK_ADAPTER_CU})
    target_link_libraries(${target} PRIVATE CUDA::cudart)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  endif()
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/grader/include ${CMAKE_SOURCE_DIR}/grader)
  target_compile_definitions(${target} PRIVATE WORKBOOK_LESSON=${lesson} "WORKBOOK_SOURCE=\"${source}\""
                             "WORKBOOK_LESSON_API=\"lessons/${slug}/api.h\"")
  # Hidden symbols: the submission's kernels and helpers stay private to its library.
  set_target_properties(${target} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
endfunction()

# What ./grade needs to build a `--source` file the same way, outside CMake.
get_filename_component(WORKBOOK_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}" ABSOLUTE)
string(REPLACE ";" "," WORKBOOK_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/workbook_config.json.in ${CMAKE_BINARY_DIR}/workbook_config.json @ONLY)
