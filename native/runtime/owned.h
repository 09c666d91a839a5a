// RAII ownership of one PJRT object: destroyed exactly once, with the
// plugin's matching *_Destroy slot, on whatever path the owner goes away.
#pragma once

#include <memory>
#include <utility>

#include "runtime/plugin.h"

namespace pjrt_score {

template <class T, class DestroyArgs, pjrt::Slot kDestroySlot, T* DestroyArgs::*kField>
class Owned {
 public:
  Owned() = default;
  Owned(std::shared_ptr<const Plugin> plugin, T* handle)
      : plugin_(std::move(plugin)), handle_(handle) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& other) noexcept : plugin_(std::move(other.plugin_)), handle_(other.release()) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      plugin_ = std::move(other.plugin_);
      handle_ = other.release();
    }
    return *this;
  }
  ~Owned() { reset(); }

  T* get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  T* release() {
    T* handle = handle_;
    handle_ = nullptr;
    return handle;
  }
  void reset() {
    if (handle_ != nullptr && plugin_) {
      auto args = MakeArgs<DestroyArgs>();
      args.*kField = handle_;
      plugin_->Call(kDestroySlot, &args);  // a failed destroy has nobody to report to
    }
    handle_ = nullptr;
  }

 private:
  std::shared_ptr<const Plugin> plugin_;
  T* handle_ = nullptr;
};

using OwnedClient = Owned<pjrt::Client, pjrt::ClientDestroyArgs, pjrt::kClientDestroy,
                          &pjrt::ClientDestroyArgs::client>;
using OwnedLoadedExecutable =
    Owned<pjrt::LoadedExecutable, pjrt::LoadedExecutableDestroyArgs, pjrt::kLoadedExecutableDestroy,
          &pjrt::LoadedExecutableDestroyArgs::executable>;
using OwnedExecutable = Owned<pjrt::Executable, pjrt::ExecutableDestroyArgs,
                              pjrt::kExecutableDestroy, &pjrt::ExecutableDestroyArgs::executable>;
using OwnedBuffer = Owned<pjrt::Buffer, pjrt::BufferDestroyArgs, pjrt::kBufferDestroy,
                          &pjrt::BufferDestroyArgs::buffer>;
using OwnedEvent =
    Owned<pjrt::Event, pjrt::EventDestroyArgs, pjrt::kEventDestroy, &pjrt::EventDestroyArgs::event>;

}  // namespace pjrt_score
