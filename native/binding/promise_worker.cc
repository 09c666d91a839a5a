#include "binding/promise_worker.h"

#include <exception>

#include "binding/errors.h"

namespace pjrt_score {

PromiseWorker::PromiseWorker(Napi::Env env, const char* name, Work work, Resolver resolver)
    : Napi::AsyncWorker(env, name),
      deferred_(Napi::Promise::Deferred::New(env)),
      work_(std::move(work)),
      resolver_(std::move(resolver)) {}

Napi::Promise PromiseWorker::Start(Napi::Env env, const char* name, Work work, Resolver resolver,
                                   const std::vector<Napi::Object>& keep_alive) {
  auto* worker = new PromiseWorker(env, name, std::move(work), std::move(resolver));
  for (const auto& object : keep_alive) worker->keep_alive_.push_back(Napi::Persistent(object));
  Napi::Promise promise = worker->deferred_.Promise();
  worker->Queue();
  return promise;
}

void PromiseWorker::Execute() {
  try {
    status_ = work_();
  } catch (const std::exception& e) {
    status_ = Status::Make(pjrt::ErrorCode::kInternal, std::string("native failure: ") + e.what());
  } catch (...) {
    status_ = Status::Make(pjrt::ErrorCode::kInternal, "native failure");
  }
  if (!status_.ok()) SetError(status_.message);
}

void PromiseWorker::OnOK() {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  try {
    std::vector<Napi::Object> kept;
    for (auto& reference : keep_alive_) kept.push_back(reference.Value());
    deferred_.Resolve(resolver_(env, kept));
  } catch (const Napi::Error& error) {
    deferred_.Reject(error.Value());
  }
}

void PromiseWorker::OnError(const Napi::Error&) {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  deferred_.Reject(MakePjrtError(env, status_).Value());
}

}  // namespace pjrt_score
