// engine-worker's engine: listens for the coordinator, loads a layer range on Prepare (two-
// phase: Prepare -> Ready|Failed, then Commit or Rollback), runs Forward batches through its
// Stage and passes the result to the next hop (or, last stage, the output rows back to the
// coordinator as Hidden).
//
// Threads: the net::Node's I/O thread only queues messages into an Inbox; one worker thread
// pops them in arrival order and does everything else (loading, compute, replies). Because
// the inbox keeps filling while the worker computes, consecutive micro-batches pipeline across
// stages (receive the next / compute this one / the I/O thread sends the previous). Requests
// are handled in arrival order; ResetSequence is applied and passed to the next hop, so it
// stays ordered with the Forwards along the whole chain.
//
// Errors: a refused load is a Failed{reason}; a refused Forward is an ErrorReport naming this
// node, sent to the coordinator (the connection the Prepare came on); the worker keeps serving.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "engine/model/stage.h"
#include "net/inbox.h"
#include "net/node.h"

namespace baton::pipeline {

struct WorkerOptions {
  std::string node_id;
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  std::string model_path;
  int threads = 0;  // <= 0: hardware concurrency
  net::AuthConfig auth = net::AuthConfig::insecure();
  // Keep a committed load when its coordinator disconnects (engine-worker --join/--registry), so a
  // restarted coordinator re-adopts it: a Prepare for the same model, layers, n_ctx, slots and
  // activations is answered Ready at once (KV cache cleared, next hop reused or reconnected).
  bool keep_load_without_coordinator = false;
  // Where the loaded layers' weights live (engine-worker --mmap: kMapped).
  WeightPlacement placement = WeightPlacement::kResident;
  // Testing only (engine-worker --test-write-delay-ms): every frame this worker sends waits this
  // long before it is written, i.e. a slow outgoing link; clock probes are not delayed.
  std::chrono::milliseconds test_write_delay{0};
};

class Worker {
 public:
  // Listens and starts the worker thread; loads nothing yet. Throws baton::Error if the address
  // cannot be bound.
  explicit Worker(WorkerOptions options);
  ~Worker();  // stop()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  uint16_t port() const { return port_; }
  const WorkerOptions& options() const { return options_; }

  // Stops taking work (the batch being computed finishes; queued ones are dropped), closes
  // every connection and joins the threads. Idempotent.
  void stop();

 private:
  struct Load;
  void run();
  // handle() behind the guard that holds chain messages until the Commit and turns any
  // exception into an ErrorReport.
  void dispatch(net::Incoming& in);
  void handle(net::Incoming& in);
  // The re-adoption above; true when it answered Ready.
  bool try_readopt(const net::Prepare& p, const net::ConnectionPtr& from, const std::string& holder);
  void on_prepare(const net::Prepare& p, const net::ConnectionPtr& from);
  void on_forward(const net::Forward& f, const net::Payload& body, const net::ConnectionPtr& from,
                  std::chrono::steady_clock::time_point received_at);
  void release(const char* why);
  // `micro_batch`: the pass the report is about (ErrorReport.micro_batch_id), if any.
  void report(const net::ConnectionPtr& from, net::ErrorCode code, const std::string& message,
              std::optional<uint64_t> micro_batch = std::nullopt);

  WorkerOptions options_;
  net::Inbox inbox_;
  std::unique_ptr<net::Node> node_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;

  // Owned by the worker thread.
  std::shared_ptr<const gguf::GgufFile> file_;
  std::string identity_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<Load> load_;
  std::vector<float> hidden_, out_rows_;
  double compute_ms_ = 0, busy_ms_ = 0;                    // busy: frame received -> result sent, summed
  std::chrono::steady_clock::time_point last_pass_end_{};  // the idle time before a pass, in the debug log
  uint64_t forwards_ = 0, tokens_ = 0, bytes_in_ = 0, bytes_out_ = 0;
};

}  // namespace baton::pipeline
