# Read by cpack once per generator (CPACK_PROJECT_CONFIG_FILE), after CPackConfig.cmake: which
# package this run builds and its fields.  `cpack -D GA_PACKAGE=dkms` builds gpuasync-dkms
# instead of gpuasyncfs (packaging/CMakeLists.txt).

# The Debian description as RPM's %description: paragraphs, no leading blanks.
function(ga_rpm_description out)
  string(REPLACE "\n.\n" "\n\n" d "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
  set(${out} "${d}" PARENT_SCOPE)
endfunction()

# packaging/changelog (Debian's format) as RPM's %changelog, newest first:
#   gpuasyncfs (0.1.0) unstable; urgency=medium      * Tue Nov 24 2026 Name <mail> - 0.1.0-1
#     * First package ...                        ->  - First package ...
#    -- Name <mail>  Tue, 24 Nov 2026 09:30:00 +0000
function(ga_rpm_changelog out)
  file(STRINGS ${CPACK_GA_CHANGELOG} lines)
  set(log "")
  set(entry "")
  foreach(l IN LISTS lines)
    if(l MATCHES "^[a-z0-9.+-]+ \\(([^)]+)\\)")
      set(ver ${CMAKE_MATCH_1})
      set(entry "")
    elseif(l MATCHES "^  \\* (.*)")
      string(APPEND entry "- ${CMAKE_MATCH_1}\n")
    elseif(l MATCHES "^    (.*)")
      string(APPEND entry "  ${CMAKE_MATCH_1}\n")
    elseif(l MATCHES "^ -- (.*)  ([A-Z][a-z][a-z]), ([0-9]+) ([A-Z][a-z][a-z]) ([0-9]+) ")
      set(who ${CMAKE_MATCH_1})
      set(date "${CMAKE_MATCH_2} ${CMAKE_MATCH_4} ${CMAKE_MATCH_3} ${CMAKE_MATCH_5}")
      string(APPEND log "* ${date} ${who} - ${ver}-1\n${entry}\n")
    endif()
  endforeach()
  set(file ${CPACK_GA_DKMS_DIR}/rpm-changelog)
  file(WRITE ${file} "${log}")
  set(${out} ${file} PARENT_SCOPE)
endfunction()

set(CPACK_PACKAGE_RELOCATABLE OFF)
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_RELEASE 1)
set(CPACK_RPM_SPEC_MORE_DEFINE "%define packager ${CPACK_PACKAGE_CONTACT}")
ga_rpm_changelog(CPACK_RPM_CHANGELOG_FILE)

if(GA_PACKAGE STREQUAL "dkms")
  # gpuasync.ko's source, built by DKMS on the machine for each kernel (dkms.conf).
  set(CPACK_PACKAGE_NAME gpuasync-dkms)
  set(CPACK_DEBIAN_PACKAGE_NAME gpuasync-dkms)
  set(CPACK_RPM_PACKAGE_NAME gpuasync-dkms)
  set(CPACK_STRIP_FILES OFF)
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Source of gpuasync.ko, the GpuAsyncCore card driver, for DKMS")
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
      "The source of gpuasync.ko, which drives SLAC GpuAsyncCore FPGA cards (FPGA\nframes written into NVIDIA GPU memory with GPUDirect RDMA) with upstream's\ndatadev ioctl ABI and offers emulated cards.  DKMS builds it for every\ninstalled kernel that has headers, and again on kernel updates.\n.\nIt is built against NVIDIA's nvidia_p2p_* when DKMS holds NVIDIA's open\nkernel modules built for the kernel, else against nv_p2p_stub.ko, a\nstand-in that serves emulated cards only.")
  set(CPACK_DEBIAN_PACKAGE_SECTION kernel)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE all)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "dkms")
  unset(CPACK_DEBIAN_PACKAGE_SUGGESTS)
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CPACK_GA_DKMS_DIR}/postinst ${CPACK_GA_DKMS_DIR}/prerm)
  set(CPACK_RPM_PACKAGE_ARCHITECTURE noarch)
  set(CPACK_RPM_PACKAGE_LICENSE "GPL-2.0-only")
  set(CPACK_RPM_PACKAGE_REQUIRES "dkms, make, gcc")
  set(CPACK_RPM_POST_INSTALL_SCRIPT_FILE ${CPACK_GA_DKMS_DIR}/post.rpm)
  set(CPACK_RPM_PRE_UNINSTALL_SCRIPT_FILE ${CPACK_GA_DKMS_DIR}/preun.rpm)
  set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION /usr/src)
  ga_rpm_description(CPACK_RPM_PACKAGE_DESCRIPTION)
  if(CPACK_GENERATOR STREQUAL "RPM")
    set(CPACK_COMPONENTS_ALL dkms)
  else()
    set(CPACK_COMPONENTS_ALL dkms dkms-deb)
  endif()
elseif(GA_PACKAGE)
  message(FATAL_ERROR "GA_PACKAGE=${GA_PACKAGE}: the packages are gpuasyncfs (no GA_PACKAGE) and dkms")
elseif(CPACK_GENERATOR STREQUAL "RPM")
  # The same files as the .deb but Debian's copyright and changelog (RPM has its License tag
  # and %changelog; LICENSE is in the doc directory).
  set(CPACK_COMPONENTS_ALL Unspecified mangz)
  if(NOT CPACK_GA_LAYOUT STREQUAL "rpm")
    message(FATAL_ERROR "This build has GA_LAYOUT=${CPACK_GA_LAYOUT}: an RPM of it would put "
            "libgpuasync.so.0 in /usr/${CPACK_GA_LIBDIR} and the Python package where only "
            "Debian's Python looks.  Configure a build for the RPM with -DGA_LAYOUT=rpm "
            "(and -DGA_RPM_PYTHON=X.Y for a target other than RHEL/Rocky 9's Python 3.9).")
  endif()
  set(CPACK_RPM_PACKAGE_LICENSE "GPL-2.0-only OR BSD-3-Clause")
  set(CPACK_RPM_PACKAGE_GROUP "System Environment/Daemons")
  ga_rpm_description(CPACK_RPM_PACKAGE_DESCRIPTION)
  # RHEL 9's names; inih is in EPEL.  rpmbuild adds the ELF sonames and python(abi).  Not
  # required, as in the .deb: libcuda.so.1 (only gpuasync-consumer links it; the daemon and
  # library load it when there) and what the .pc file's static-link Requires.private bring
  # in (pkg-config, inih's .pc).
  set(CPACK_RPM_PACKAGE_REQUIRES "fuse3, fuse3-libs >= 3.10, inih")
  string(APPEND CPACK_RPM_SPEC_MORE_DEFINE "
%global __requires_exclude ^(libcuda\\\\.so|pkgconfig\\\\(|/usr/bin/pkg-config)")
  # libgpuasync.so.0 in /usr/lib64: the loader's cache.
  set(CPACK_RPM_POST_INSTALL_SCRIPT_FILE ${CPACK_GA_DKMS_DIR}/ldconfig.rpm)
  set(CPACK_RPM_POST_UNINSTALL_SCRIPT_FILE ${CPACK_GA_DKMS_DIR}/ldconfig.rpm)
  file(WRITE ${CPACK_GA_DKMS_DIR}/ldconfig.rpm "/sbin/ldconfig\n")
  # The operator's edits survive an upgrade (the new file lands as .rpmnew).
  set(CPACK_RPM_USER_FILELIST "%config(noreplace) /etc/gpuasyncfs.conf")
  # Directories other packages own (filesystem, python3-libs, pkgconf, cmake-filesystem,
  # systemd).
  set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION /usr/lib/systemd /usr/lib/systemd/system
      /usr/share/man /usr/share/man/man3 /usr/share/man/man5 /usr/share/man/man8
      /usr/lib/python${CPACK_GA_RPM_PYTHON}
      /usr/lib/python${CPACK_GA_RPM_PYTHON}/site-packages /usr/${CPACK_GA_LIBDIR}/pkgconfig
      /usr/${CPACK_GA_LIBDIR}/cmake)
endif()
