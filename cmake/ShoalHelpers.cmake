# shoal_add_layer(NAME SOURCES ...): an object library of one layer, with the project's flags.
function(shoal_add_layer name)
  add_library(${name} OBJECT ${ARGN})
  target_link_libraries(${name} PUBLIC shoal_flags fmt::fmt Threads::Threads)
  # libshoal's own sources: <shoal/shoal.h> never brings the device facade (its per-unit state would
  # load and reserve libshoal's kernel module on every PE); the facade header refuses them.
  target_compile_definitions(${name} PRIVATE SHOAL_DETAIL_LIBSHOAL_BUILD)
endfunction()

# shoal_add_test(NAME <name> SOURCES <src...> LABELS <labels...> [NUM_PES <n...>] [LIBS <libs...>]
#                [TIMEOUT <s>] [PASS_REGEX <re>] [ENV <k=v...>] [VARIANT <suffix>])
# One executable; with NUM_PES, one CTest test per PE count, each run through shoalrun. VARIANT
# registers the same executable again under <name><suffix>.npN (e.g. with another ENV).
function(shoal_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;PASS_REGEX;VARIANT" "SOURCES;LABELS;NUM_PES;LIBS;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT TARGET ${T_NAME})
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE shoal_flags ${T_LIBS})
  endif()
  set(env SHOAL_DEBUG=warn ${T_ENV})
  if(T_NUM_PES)
    foreach(np IN LISTS T_NUM_PES)
      set(test_name ${T_NAME}${T_VARIANT}.np${np})
      add_test(NAME ${test_name}
               COMMAND $<TARGET_FILE:shoalrun> -n ${np} --timeout ${T_TIMEOUT} -- $<TARGET_FILE:${T_NAME}>)
      set_tests_properties(${test_name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                           ENVIRONMENT "${env}")
      if(T_PASS_REGEX)
        set_tests_properties(${test_name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS_REGEX}")
      endif()
    endforeach()
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${env}")
  endif()
endfunction()
