# Included into llama.cpp's own CMake project when `make` compiles llama-cpp-python (see CMAKE_ARGS in
# the Makefile): the Python bindings Skein uses load libllama and ggml only, so llama.cpp's "common"
# library (which llama-cpp-python turns on for its multimodal part, also off) is not compiled. That
# is about half of the compile.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp's common library (not loaded by the Python bindings)" FORCE)
