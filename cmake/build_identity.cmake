# Writes build_identity.cpp: a SHA-256 over Stax's sources (their paths relative to src/ and
# their bytes, in sorted order), which ahead-of-time packages record and loading compares
# (src/package/package.h): a package runs only on the build that wrote it. Run by the build
# (cmake -P) whenever a source changes; the file is rewritten only when the digest changes.
#   -DSOURCE_DIR=<repo>/src -DOUTPUT=<file>
file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*.h" "${SOURCE_DIR}/*.cpp"
     "${SOURCE_DIR}/*.txt")
list(SORT sources)
set(all "")
foreach(source IN LISTS sources)
  file(SHA256 "${SOURCE_DIR}/${source}" digest)
  string(APPEND all "${source} ${digest}\n")
endforeach()
string(SHA256 identity "${all}")
set(content "// Written by cmake/build_identity.cmake: a digest of Stax's sources.\nnamespace stax {\nextern const char* const kStaxSourceDigest;\nconst char* const kStaxSourceDigest = \"${identity}\";\n}  // namespace stax\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
