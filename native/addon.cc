// pjrt-score native addon: registers the three classes, nothing else.
#include <napi.h>

#include "addon_data.h"
#include "buffer.h"
#include "client.h"
#include "executable.h"

namespace pjrt_score {

Napi::Object InitAddon(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  Napi::Function client = Client::Init(env);
  Napi::Function executable = Executable::Init(env);
  Napi::Function buffer = DeviceBuffer::Init(env);
  data->client_constructor = Napi::Persistent(client);
  data->executable_constructor = Napi::Persistent(executable);
  data->buffer_constructor = Napi::Persistent(buffer);
  env.SetInstanceData(data);
  exports.Set("Client", client);
  exports.Set("Executable", executable);
  exports.Set("DeviceBuffer", buffer);
  return exports;
}

}  // namespace pjrt_score

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  return pjrt_score::InitAddon(env, exports);
}

NODE_API_MODULE(pjrt_score, Init)
