# embed_file(TARGET SYMBOL FILE): compiles FILE into TARGET as
#   std::string_view SYMBOL();   (declared by the caller's header, in namespace codemode::embedded)
# The bytes are emitted as an array initialiser, so any content (quotes, NULs, long lines) is safe.
function(embed_file target symbol file)
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DSYMBOL=${symbol}
            -P "${CMAKE_SOURCE_DIR}/cmake/embed_file_script.cmake"
    DEPENDS "${file}" "${CMAKE_SOURCE_DIR}/cmake/embed_file_script.cmake"
    COMMENT "Embedding ${file}")
  target_sources(${target} PRIVATE "${out}")
endfunction()
