# V8 10.2 as shipped inside Debian 12's libnode108 (Node 18), unpacked by scripts/setup into
# .deps/libnode. The compile definitions must match the library's build (config.gypi): no
# pointer compression, no 31-bit smis, no V8 sandbox; a mismatch aborts at V8::Initialize.
set(LIBNODE_PREFIX "${CMAKE_SOURCE_DIR}/.deps/libnode/usr" CACHE PATH "Prefix holding include/node and libnode.so")
find_path(V8_INCLUDE_DIR NAMES v8.h libplatform/libplatform.h
          PATHS ${LIBNODE_PREFIX}/include/node NO_DEFAULT_PATH REQUIRED)
find_library(LIBNODE_LIBRARY NAMES node
             PATHS ${LIBNODE_PREFIX}/lib/x86_64-linux-gnu NO_DEFAULT_PATH REQUIRED)
get_filename_component(LIBNODE_LIBDIR "${LIBNODE_LIBRARY}" DIRECTORY)

add_library(v8_libnode INTERFACE)
add_library(v8::libnode ALIAS v8_libnode)
target_include_directories(v8_libnode SYSTEM INTERFACE ${V8_INCLUDE_DIR})
target_compile_definitions(v8_libnode INTERFACE V8_PROMISE_INTERNAL_FIELD_COUNT=1)
target_link_libraries(v8_libnode INTERFACE ${LIBNODE_LIBRARY} Threads::Threads)
# The binaries find libnode.so.108 in the project prefix without LD_LIBRARY_PATH.
target_link_options(v8_libnode INTERFACE "-Wl,-rpath,${LIBNODE_LIBDIR}")
