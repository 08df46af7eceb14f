# NCCL for shoal-bench's collective baselines (bench/coll/coll_bench.cu, compiled under
# SHOAL_BENCH_NCCL): SHOAL_NCCL_HOME (a folder with include/ and lib/), else the Python package
# nvidia-nccl-cu13 of the python3 on PATH, else the system (the CUDA toolkit's folders and the
# default paths). Without it, shoal-bench's collectives run without NCCL rows.
option(SHOAL_BENCH_WITH_NCCL "Compare shoal-bench's collectives with NCCL where it is found" ON)
set(SHOAL_NCCL_HOME "" CACHE PATH "NCCL folder with include/ and lib/ (empty: ask python3 for nvidia.nccl)")

if(NOT SHOAL_BENCH_WITH_NCCL)
  message(STATUS "shoal: SHOAL_BENCH_WITH_NCCL=OFF; shoal-bench's collectives have no NCCL rows")
  return()
endif()

set(nccl_home "${SHOAL_NCCL_HOME}")
if(NOT nccl_home)
  find_program(SHOAL_PYTHON3 NAMES python3 NO_CACHE)
  if(SHOAL_PYTHON3)
    execute_process(
      COMMAND ${SHOAL_PYTHON3} -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
      OUTPUT_VARIABLE nccl_home RESULT_VARIABLE probe_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT probe_rc EQUAL 0)
      set(nccl_home "")
    endif()
  endif()
endif()

unset(nccl_include)
unset(nccl_lib)
if(nccl_home)
  # Header and library from the same folder (NO_CACHE: looked up afresh on every configure).
  find_path(nccl_include nccl.h HINTS "${nccl_home}/include" NO_DEFAULT_PATH NO_CACHE)
  find_library(nccl_lib NAMES nccl libnccl.so.2 HINTS "${nccl_home}/lib" NO_DEFAULT_PATH NO_CACHE)
endif()
if(NOT (nccl_include AND nccl_lib))
  unset(nccl_include)
  unset(nccl_lib)
  find_path(nccl_include nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_CACHE)
  find_library(nccl_lib NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR} "${CUDAToolkit_LIBRARY_ROOT}/lib"
               "${CUDAToolkit_LIBRARY_DIR}/../lib" NO_CACHE)
endif()

if(NOT (nccl_include AND nccl_lib))
  message(STATUS "shoal: NCCL not found (SHOAL_NCCL_HOME, pip nvidia-nccl-cu13 or the system: nccl.h and "
                 "libnccl.so); shoal-bench's collectives run without NCCL rows")
  return()
endif()
message(STATUS "shoal: NCCL ${nccl_lib}; shoal-bench compares its collectives with it")
get_filename_component(nccl_lib_dir "${nccl_lib}" DIRECTORY)
target_compile_definitions(shoal-bench PRIVATE SHOAL_BENCH_NCCL=1)
target_include_directories(shoal-bench SYSTEM PRIVATE ${nccl_include})
target_link_libraries(shoal-bench PRIVATE ${nccl_lib})
set_property(TARGET shoal-bench APPEND PROPERTY BUILD_RPATH "${nccl_lib_dir}")
