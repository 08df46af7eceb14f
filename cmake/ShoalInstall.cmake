# cmake --install: headers, libshoal.so, the tools, a CMake package (find_package(shoal) ->
# shoal::shoal) and a pkg-config file (shoal.pc).
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/shoal DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# libshoal.so itself needs no RUNPATH to its own directory.
set_target_properties(shoal PROPERTIES INSTALL_RPATH "")
install(TARGETS shoal EXPORT shoal-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS shoal_shmem EXPORT shoal-targets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT shoal-targets NAMESPACE shoal:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shoal)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/shoal-config.cmake.in
                              ${PROJECT_BINARY_DIR}/shoal-config.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shoal)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shoal-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shoal-config.cmake ${PROJECT_BINARY_DIR}/shoal-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shoal)

file(RELATIVE_PATH SHOAL_PC_RELATIVE_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/shoal.pc.in ${PROJECT_BINARY_DIR}/shoal.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shoal.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# OpenSHMEM (opt-in for programs: shoal::shmem, pkg-config shoal-shmem, oshcc/oshc++/oshrun).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/compat/shmem/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shoal-shmem)
configure_file(${PROJECT_SOURCE_DIR}/cmake/shoal-shmem.pc.in ${PROJECT_BINARY_DIR}/shoal-shmem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shoal-shmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/osh/oshcc ${PROJECT_SOURCE_DIR}/tools/osh/oshc++
                 ${PROJECT_SOURCE_DIR}/tools/osh/oshrun DESTINATION ${CMAKE_INSTALL_BINDIR})
