// Scratch memory of one thread for the matmul kernels (matmul_bf16.cc, matmul_f32.cc), kept between
// calls, grown to the largest call it served and never cleared (every call writes what it reads):
// no allocation, page faults or zeroing per call. `kWhich` tells the buffers apart: each kernel has
// its own (a call keeps several at once).
#pragma once

#include <cstdint>
#include <memory>
#include <new>

namespace pjrt_score {

// `count` elements, or nullptr when they cannot be had.
template <class T, int kWhich>
T* ThreadScratch(int64_t count) {
  static thread_local std::unique_ptr<T[]> data;
  static thread_local int64_t size = 0;
  if (count > size) {
    data.reset();
    size = 0;
    data.reset(new (std::nothrow) T[count]);
    if (data == nullptr) return nullptr;
    size = count;
  }
  return data.get();
}

}  // namespace pjrt_score
