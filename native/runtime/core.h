// Native state shared by the JS wrappers and the workers that use it. Each
// holds its parent by shared_ptr, so a PJRT client is destroyed only after
// every executable and buffer made from it, whatever order JS drops them in,
// and an in-flight worker keeps what it uses alive until it finishes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/owned.h"
#include "runtime/plugin.h"

namespace pjrt_score {

struct DeviceInfo {
  int id = 0;
  std::string kind;
  std::string description;
  // What the plugin's memory stats give as the device's allocatable bytes;
  // -1 where the plugin does not say (the CPU plugin: host memory).
  int64_t memory_limit = -1;
};

struct ClientCore {
  std::shared_ptr<const Plugin> plugin;
  OwnedClient client;
  std::vector<pjrt::Device*> devices;  // addressable devices, owned by the client
  std::vector<DeviceInfo> device_info;
  std::string platform_name;
  std::string platform_version;
  // The `pjrt_score_prefix_attention` and `pjrt_score_causal_attention`
  // custom calls are registered with this client's plugin
  // (native/kernels/prefix_attention_ffi.h).
  bool prefix_attention_kernel = false;
};

struct ExecutableCore {
  std::shared_ptr<ClientCore> client;
  OwnedLoadedExecutable executable;
  size_t num_outputs = 0;
  std::vector<pjrt::ElementType> output_types;
  std::vector<std::vector<int64_t>> output_dims;
};

struct BufferCore {
  std::shared_ptr<ClientCore> client;
  OwnedBuffer buffer;
  pjrt::ElementType type = pjrt::ElementType::kF32;
  std::vector<int64_t> dims;
  size_t byte_size = 0;  // dense host size
};

}  // namespace pjrt_score
