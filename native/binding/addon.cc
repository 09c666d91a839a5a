// pjrt-score native addon: registers the three classes, one counter
// (externalBytes: device-buffer bytes reported to V8 and not yet released),
// deferExternalMemory (begin/end a span whose changes to that count reach V8
// as one report at its end), setErrorClasses (the facade's error classes, for
// the errors natives throw), releaseFreeHeap (the allocator's free pages back to
// the OS, off the JS thread; resolves whether any were given back) and
// attentionKernelPaths (which paths the fused attention kernels take on this
// CPU, kernel_isa.h), matmulKernelPath (the bf16 matmul kernel's, matmul_bf16.h), checkBf16Tiles (a
// bf16 tile path's self-check, run now: bf16_tiles_check.h), and the kernel probe's three:
// kernelIsas, setTriedKernelIsa and probeKernelIsa (kernel_probe.h).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "binding/addon_data.h"
#include "binding/buffer.h"
#include "binding/client.h"
#include "binding/errors.h"
#include "binding/executable.h"
#include "binding/promise_worker.h"
#include "kernels/kernel_isa.h"
#include "kernels/kernel_probe.h"
#include "kernels/matmul_bf16.h"
#include "kernels/matmul_f32.h"
#include "kernels/prefix_attention.h"
#include "kernels/thread_pool.h"
#include "kernels/usable_cpus.h"
#include "runtime/heap_trim.h"

namespace pjrt_score {

namespace {
Napi::Value ExternalBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env,
                           static_cast<double>(env.GetInstanceData<AddonData>()->external_bytes));
}

// deferExternalMemory(true) begins a deferral, (false) ends one; spans nest, and the sum of their
// changes is reported when the last ends. Returns the depth after the call.
Napi::Value DeferExternalMemory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBoolean())
    ThrowTypeError(env, "deferExternalMemory(on: boolean)");
  AddonData* data = env.GetInstanceData<AddonData>();
  if (info[0].As<Napi::Boolean>().Value()) {
    ++data->deferring;
  } else if (data->deferring > 0 && --data->deferring == 0 && data->deferred_bytes != 0) {
    Napi::MemoryManagement::AdjustExternalMemory(env, data->deferred_bytes);
    data->deferred_bytes = 0;
  }
  return Napi::Number::New(env, data->deferring);
}

Napi::Value ReleaseFreeHeapBinding(const Napi::CallbackInfo& info) {
  auto released = std::make_shared<bool>(false);
  return PromiseWorker::Start(
      info.Env(), "pjrt-score:release-free-heap",
      [released]() {
        *released = ReleaseFreeHeap();
        return Status::Ok();
      },
      [released](Napi::Env env, const std::vector<Napi::Object>&) -> Napi::Value {
        return Napi::Boolean::New(env, *released);
      });
}
// attentionKernelPaths(headDim) -> { cpu, allowed, f32, bf16, bf16Note? }: the CPU's best
// instruction set for the kernels, the one PJRT_SCORE_KERNEL_ISA allows now, the paths an f32 and a
// bf16 call of that head dim take, and why the bf16 path is not the allowed one's (a matrix-unit
// path that failed its self-check), when it is not.
Napi::Value AttentionKernelPaths(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber())
    ThrowTypeError(env, "attentionKernelPaths(headDim: number)");
  const double d = info[0].As<Napi::Number>().DoubleValue();
  if (!(d >= 1 && d <= 65536) || d != static_cast<double>(static_cast<int64_t>(d)))
    ThrowTypeError(env, "attentionKernelPaths: headDim must be an integer in [1, 65536]");
  Napi::Object out = Napi::Object::New(env);
  out.Set("cpu", KernelIsaName(CpuKernelIsa()));
  out.Set("allowed", KernelIsaName(AllowedKernelIsa()));
  out.Set("f32", PrefixAttentionPath(static_cast<int64_t>(d)));
  std::string note;
  out.Set("bf16", PrefixAttentionBf16Path(static_cast<int64_t>(d), &note));
  if (!note.empty()) out.Set("bf16Note", note);
  return out;
}

// matmulKernelPath() -> "avx512bf16" | "portable": the inner loop the bf16 matmul kernel takes now
// (matmul_bf16.h; PJRT_SCORE_KERNEL_ISA caps it, read on every call); matmulKernelPath("f32") ->
// "avx512" | "portable": the f32 kernel's (matmul_f32.h).
Napi::Value MatmulKernelPath(const Napi::CallbackInfo& info) {
  const bool f32 =
      info.Length() > 0 && info[0].IsString() && info[0].As<Napi::String>().Utf8Value() == "f32";
  return Napi::String::New(info.Env(), f32 ? MatmulF32Path() : MatmulBf16Path());
}

// kernelThreads() -> { threads, source, affinity, quota }: the kernels' pool size and what set it
// (thread_pool.h), and the CPUs the process may use read now (usable_cpus.h; quota 0: none).
Napi::Value KernelThreads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ThreadPool::Sizing& sizing = ThreadPool::SharedSizing();
  const UsableCpus cpus = ReadUsableCpus();
  Napi::Object out = Napi::Object::New(env);
  out.Set("threads", sizing.threads);
  out.Set("source", sizing.source);
  out.Set("affinity", cpus.affinity);
  out.Set("quota", cpus.quota);
  return out;
}

// checkBf16Tiles(path) -> { ok, detail }: the self-check of a bf16 tile path against the portable
// tiles, run now (the dispatcher's verdict is once per process): "portable", "avx512bf16" and "amx"
// where this CPU has them, "test-swapped-pairs" (a deliberately wrong product) anywhere.
Napi::Value CheckBf16Tiles(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowTypeError(env, "checkBf16Tiles(path: string)");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  std::string detail;
  const bool ok = CheckBf16TilePath(path, &detail);
  if (detail.empty())
    ThrowTypeError(env, "checkBf16Tiles: no bf16 tile path '" + path + "' on this CPU");
  Napi::Object out = Napi::Object::New(env);
  out.Set("ok", ok);
  out.Set("detail", detail);
  return out;
}

KernelIsa IsaArgument(const Napi::CallbackInfo& info, const char* usage) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowTypeError(env, usage);
  KernelIsa isa;
  const std::string name = info[0].As<Napi::String>().Utf8Value();
  if (!KernelIsaFromName(name.c_str(), &isa))
    ThrowTypeError(env, std::string(usage) + ": unknown instruction set '" + name +
                            "' (portable, avx2, avx512, avx512bf16, amx)");
  return isa;
}

// kernelIsas() -> { cpu, tried, allowed }: the CPU's best, the probe's ceiling, what the kernels
// take now. Runs no kernel and no self-check.
Napi::Value KernelIsas(const Napi::CallbackInfo& info) {
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("cpu", KernelIsaName(CpuKernelIsa()));
  out.Set("tried", KernelIsaName(TriedKernelIsa()));
  out.Set("allowed", KernelIsaName(AllowedKernelIsa()));
  return out;
}

// setTriedKernelIsa(isa): the probe's verdict, the highest instruction set shown to run here.
Napi::Value SetTriedKernelIsaBinding(const Napi::CallbackInfo& info) {
  SetTriedKernelIsa(IsaArgument(info, "setTriedKernelIsa(isa: string)"));
  return info.Env().Undefined();
}

// probeKernelIsa(isa) -> { ok, detail }: the trial of kernel_probe.h (in the probe's child only).
Napi::Value ProbeKernelIsaBinding(const Napi::CallbackInfo& info) {
  const KernelIsa isa = IsaArgument(info, "probeKernelIsa(isa: string)");
  std::string detail;
  const bool ok = ProbeKernelIsa(isa, &detail);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("ok", ok);
  out.Set("detail", detail);
  return out;
}
}  // namespace

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
  exports.Set("externalBytes", Napi::Function::New<ExternalBytes>(env, "externalBytes"));
  exports.Set("deferExternalMemory",
              Napi::Function::New<DeferExternalMemory>(env, "deferExternalMemory"));
  exports.Set("setErrorClasses", Napi::Function::New<SetErrorClasses>(env, "setErrorClasses"));
  exports.Set("releaseFreeHeap",
              Napi::Function::New<ReleaseFreeHeapBinding>(env, "releaseFreeHeap"));
  exports.Set("matmulKernelPath", Napi::Function::New<MatmulKernelPath>(env, "matmulKernelPath"));
  exports.Set("attentionKernelPaths",
              Napi::Function::New<AttentionKernelPaths>(env, "attentionKernelPaths"));
  exports.Set("kernelThreads", Napi::Function::New<KernelThreads>(env, "kernelThreads"));
  exports.Set("checkBf16Tiles", Napi::Function::New<CheckBf16Tiles>(env, "checkBf16Tiles"));
  exports.Set("kernelIsas", Napi::Function::New<KernelIsas>(env, "kernelIsas"));
  exports.Set("setTriedKernelIsa",
              Napi::Function::New<SetTriedKernelIsaBinding>(env, "setTriedKernelIsa"));
  exports.Set("probeKernelIsa", Napi::Function::New<ProbeKernelIsaBinding>(env, "probeKernelIsa"));
  return exports;
}

}  // namespace pjrt_score

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  return pjrt_score::InitAddon(env, exports);
}

NODE_API_MODULE(pjrt_score, Init)
