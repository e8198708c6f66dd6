# GoogleTest, Google Benchmark and nlohmann-json: from the system first. Where one is missing,
# FetchContent downloads it (for users with a network); when that fails too, the error names
# the packages to install.
include(FetchContent)
# nlohmann-json is header-only: some systems ship the header without a CMake config.
find_package(nlohmann_json QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(WORKBOOK_NLOHMANN_INCLUDE nlohmann/json.hpp)
  if(WORKBOOK_NLOHMANN_INCLUDE)
    add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
    target_include_directories(nlohmann_json::nlohmann_json INTERFACE ${WORKBOOK_NLOHMANN_INCLUDE})
  endif()
endif()
set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
set(BENCHMARK_ENABLE_GTEST_TESTS OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(JSON_BuildTests OFF CACHE BOOL "" FORCE)
FetchContent_Declare(GTest
  URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz
  FIND_PACKAGE_ARGS NAMES GTest)
FetchContent_Declare(benchmark
  URL https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz
  FIND_PACKAGE_ARGS NAMES benchmark)
FetchContent_Declare(nlohmann_json
  URL https://github.com/nlohmann/json/releases/download/v3.11.3/json.tar.xz
  FIND_PACKAGE_ARGS NAMES nlohmann_json)
set(_workbook_missing "")
foreach(_dep GTest benchmark nlohmann_json)
  if(_dep STREQUAL "nlohmann_json" AND TARGET nlohmann_json::nlohmann_json)
    continue()
  endif()
  FetchContent_MakeAvailable(${_dep})
endforeach()
if(NOT TARGET GTest::gtest AND TARGET gtest)
  add_library(GTest::gtest ALIAS gtest)
endif()
if(NOT TARGET GTest::gtest)
  list(APPEND _workbook_missing "GoogleTest (Debian/Ubuntu: libgtest-dev)")
endif()
if(NOT TARGET benchmark::benchmark)
  list(APPEND _workbook_missing "Google Benchmark (Debian/Ubuntu: libbenchmark-dev)")
endif()
if(NOT TARGET nlohmann_json::nlohmann_json)
  list(APPEND _workbook_missing "nlohmann-json (Debian/Ubuntu: nlohmann-json3-dev)")
endif()
if(_workbook_missing)
  string(REPLACE ";" ", " _list "${_workbook_missing}")
  message(FATAL_ERROR "Missing dependencies: ${_list}. Install them, or configure with a network so CMake can fetch them.")
endif()
