# Sourced by scripts/setup.sh and scripts/setup_python.sh: how ccache is to treat Stax's builds.
# Every build directory sits directly under the repository (build/, build-asan/,
# build-python-<tag>/), so with the repository as base_dir the compile commands of two builds,
# or of two clones, are the same text and one build's objects serve the other's. Debug
# information names the directory it was built in; ccache would put that into the key unless
# hash_dir is off (the source paths in it stay absolute, so debuggers still find the files).
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
# Both builds must name the compiler alike: ccache keys on the compiler's name, and pip's build
# otherwise takes Python's `g++` where CMake alone takes `c++`.
export CXX="${CXX:-g++}"
