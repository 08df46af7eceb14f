# NVSHMEM compatibility layer (opt-in): <nvshmem.h>/<nvshmemx.h> on shoal (codegen/gen_nvshmem_compat.py).
# CMake: target shoal::nvshmem (the compat include folder + shoal::shoal); pkg-config: shoal-nvshmem.
# Installed under <includedir>/shoal/compat/nvshmem, so they never shadow a real NVSHMEM's headers unless asked.
add_library(shoal_nvshmem INTERFACE)
add_library(shoal::nvshmem ALIAS shoal_nvshmem)
set_target_properties(shoal_nvshmem PROPERTIES EXPORT_NAME nvshmem)
target_include_directories(shoal_nvshmem INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include/compat/nvshmem>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/shoal/compat/nvshmem>)
target_link_libraries(shoal_nvshmem INTERFACE shoal)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/compat/nvshmem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shoal/compat)
install(TARGETS shoal_nvshmem EXPORT shoal-targets)
file(RELATIVE_PATH SHOAL_PC_RELATIVE_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/shoal-nvshmem.pc.in ${PROJECT_BINARY_DIR}/shoal-nvshmem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shoal-nvshmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
