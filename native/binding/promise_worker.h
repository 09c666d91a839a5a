// An async worker that settles a promise. The work runs on a libuv worker
// thread and must not touch Node-API; the resolver runs on the JS thread.
// JS objects the work depends on are held by references until it settles.
#pragma once

#include <napi.h>

#include <functional>
#include <vector>

#include "runtime/status.h"

namespace pjrt_score {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  using Work = std::function<Status()>;
  // Receives the keep-alive objects again, as live handles, in Start's order.
  using Resolver = std::function<Napi::Value(Napi::Env, const std::vector<Napi::Object>& kept)>;

  // Queues the work and returns its promise. `keep_alive` objects stay
  // referenced (not collectable) until the promise settles.
  static Napi::Promise Start(Napi::Env env, const char* name, Work work, Resolver resolver,
                             const std::vector<Napi::Object>& keep_alive = {});

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  PromiseWorker(Napi::Env env, const char* name, Work work, Resolver resolver);

  Napi::Promise::Deferred deferred_;
  Work work_;
  Resolver resolver_;
  Status status_;
  std::vector<Napi::ObjectReference> keep_alive_;
};

}  // namespace pjrt_score
