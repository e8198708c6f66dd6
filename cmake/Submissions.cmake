# A submission is one file compiled with the grader's adapter into its own shared library,
# which the grader opens privately. Lesson 1 is plain C++ whatever the file's extension.
set(WORKBOOK_ADAPTER_CU ${CMAKE_SOURCE_DIR}/grader/adapters/submission_adapter.cu)
set(WORKBOOK_ADAPTER_CPP ${CMAKE_SOURCE_DIR}/grader/adapters/submission_adapter.cpp)

# workbook_add_submission(<target> <lesson> <source>)
function(workbook_add_submission target lesson source)
  if(lesson EQUAL 1)
    add_library(${target} MODULE ${WORKBOOK_ADAPTER_CPP})
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/grader/include)
  else()
    add_library(${target} MODULE ${WORKBOOK_ADAPTER_CU})
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/grader/include)
    target_link_libraries(${target} PRIVATE CUDA::cudart)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  endif()
  target_compile_definitions(${target} PRIVATE WORKBOOK_LESSON=${lesson} "WORKBOOK_SOURCE=\"${source}\"")
  # Hidden symbols: the submission's kernels and helpers stay private to its library.
  set_target_properties(${target} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
endfunction()

# What ./grade needs to build a `--source` file the same way, outside CMake.
get_filename_component(WORKBOOK_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}" ABSOLUTE)
string(REPLACE ";" "," WORKBOOK_ARCH_LIST "${CMAKE_CUDA_ARCHITECTURES}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/workbook_config.json.in ${CMAKE_BINARY_DIR}/workbook_config.json @ONLY)
