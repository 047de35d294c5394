// Continuous batching: many generation requests share forward passes. One scheduler thread
// owns the model's head (embedding, logits) and a LayerRunner (local layers or a cluster);
// each step it gathers, from every active sequence, either its next prompt chunk or its one
// new token, runs them as micro-batches through the runner (several in flight when the
// runner is a pipeline), samples each sequence's next token with its own Sampler, and
// publishes the token to the request's handle. Sequences join and leave between steps; a
// finished or cancelled sequence frees its KV cache at once.
//
// Because every kernel is batch-invariant, a request's tokens and log-probabilities are
// bitwise the same whether it runs alone or among others, locally or on a cluster.
//
// Thread-safety: submit(), stats() and every RequestHandle method may be called from any
// thread; everything else runs on the scheduler's own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "engine/model/model_head.h"
#include "engine/runtime/finish_reason.h"
#include "engine/runtime/layer_runner.h"
#include "engine/runtime/speculation.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"
#include "engine/serving/prefix_cache.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton {
class DraftModel;  // engine/runtime/draft_model.h
}

namespace baton::grammar {
struct CompiledConstraint;
}

namespace baton::serving {

// All slots busy and the wait queue full: the HTTP layer answers 503.
class OverloadedError : public Error {
 public:
  using Error::Error;
};

// The runner cannot serve now (e.g. a cluster lost a node and the others cannot hold the
// model): submit() refuses with the reason; the HTTP layer answers 503 like an overload.
class UnavailableError : public OverloadedError {
 public:
  using OverloadedError::OverloadedError;
};

struct CompletionRequest {
  std::vector<int32_t> prompt;    // final token ids (BOS / chat template already applied)
  int32_t max_tokens = 16;        // < 0: until end of generation or the context is full
  SamplerParams sampling;         // validated by submit()
  bool logprobs = false;          // report the chosen token's log-probability
  size_t n_top_logprobs = 0;      // and the top n of the raw distribution (<= 20)
  std::vector<std::string> stop;  // generation ends before the first occurrence of any
  bool ignore_eos = false;        // keep going past end-of-generation tokens
  bool cache_prompt = true;       // reuse a cached prefix's KV, and leave this one's for others
  // Constrained decoding (grammar, JSON schema, forced tool call): masks the logits before
  // every sample (engine/grammar/token_constraint.h). Null: unconstrained.
  std::shared_ptr<const grammar::CompiledConstraint> constraint;
  // Speculative decoding (engine/runtime/speculation.h) for this request: llama-server's
  // speculative.n_max / n_min; < 0: the server's --draft-max / --draft-min. The output is the
  // same either way; only the speed changes.
  int draft_max = -1;
  int draft_min = -1;
};

// One generated token and the text it released. Text is held back while it is an incomplete
// UTF-8 character or could still become the start of a stop string, so the concatenation of
// all `text` is exactly the completion (without the stop string). Every generated token gives
// exactly one event (completion_tokens of them); an end-of-generation token's own text is never
// part of the completion: its event carries only what was still held back.
struct TokenEvent {
  int32_t token = 0;
  std::string text;
  float logprob = 0.0f;           // when requested
  std::vector<TokenLogprob> top;  // when n_top_logprobs > 0, best first
};

// Which kind of failure ended a request (finish_reason kError): what the HTTP status is chosen
// from (502 for kFailed, 503 for kShuttingDown), never the text of the message.
enum class ErrorKind : uint8_t {
  kNone,          // the request did not fail
  kFailed,        // generation failed: the runner (a node, named in the message) or the sampler
  kShuttingDown,  // the server stopped before the request ended
};

struct CompletionSummary {
  FinishReason finish_reason = FinishReason::kNone;  // kStop, kLength, kCancelled or kError
  ErrorKind error_kind = ErrorKind::kNone;           // for kError: which kind
  std::string error;                                 // for kError: what failed, naming the node if remote
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;  // of prompt_tokens, served from a cached prefix's KV
  size_t completion_tokens = 0;
  double queue_seconds = 0;        // submit -> first forward pass
  double time_to_first_token = 0;  // submit -> first token published
  double generation_seconds = 0;   // first -> last token
  SpecCounters speculation;        // draft tokens proposed and kept (llama-server's draft_n, draft_n_accepted)
};

class Scheduler;
class ActiveSequence;

// The consumer's side of one request. Events are queued without bound (a slow consumer
// never stalls the batch); next() hands them out in order.
class RequestHandle {
 public:
  enum class Poll { kToken, kDone, kTimeout };
  // Waits up to `timeout`: kToken with `event` filled, kDone once every token has been taken
  // and the request has ended (then summary() is final), or kTimeout.
  Poll next(TokenEvent& event, std::chrono::milliseconds timeout);
  // The client went away: the scheduler drops the sequence before its next step and frees its
  // cache; the request ends with finish_reason "cancelled". Idempotent.
  void cancel();
  bool cancelled() const;
  CompletionSummary summary() const;

 private:
  friend class Scheduler;
  friend class ActiveSequence;
  void publish(TokenEvent event);
  void complete(CompletionSummary summary);

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<TokenEvent> events_;
  CompletionSummary summary_;
  bool done_ = false;
  bool cancelled_ = false;
};

struct SchedulerOptions {
  int slots = 4;         // sequences generated at once; the runner's KV cache must hold as many
  int queue_limit = 64;  // requests waiting for a slot; one more -> OverloadedError
  int n_batch = 512;     // tokens per forward pass (prompt chunks + decode tokens), >= 1
  // Prompt tokens per pass, as pieces of the n_batch chunks that change no bit
  // (engine/runtime/prompt_pieces.h): with a pipeline, a prompt's pieces are in flight at
  // several stages at once. 0: auto_prompt_piece() (128 / stages within [8, 32] on a pipeline, about 4
  // per stage for a short prompt; whole chunks locally).
  int prefill_chunk = 0;
  // Finished sequences leave their KV in their slots for requests that share a prefix
  // (llama-server's cache_prompt); idle slots hold them, the least recently used goes first.
  bool cache_prompt = true;
  // Speculative decoding by n-gram lookup (engine/runtime/speculation.h): same output, fewer
  // trips through the layers when the text repeats. Drafts shrink as more sequences share the
  // passes: with more than spec_max_decoders decoders in a pass none is sent.
  SpecParams speculation;
  int spec_max_decoders = 4;
  DraftModel* draft_model = nullptr;  // SpecMode::kDraft's drafts (not owned; outlives the scheduler)
  // > 0: no request generates more tokens than this (a larger or unlimited max_tokens is cut to
  // it), as llama-server's -n caps each request's n_predict. <= 0: no cap. The HTTP fuzz target
  // serves with 2, so its executions go to parsing and routing rather than generating.
  int n_predict = 0;
};

struct SchedulerStats {
  int active = 0;         // sequences in slots
  int queued = 0;         // waiting for a slot
  uint64_t requests = 0;  // accepted since start
  uint64_t rejected = 0;  // OverloadedError
  uint64_t failed = 0;    // ended with "error"
  uint64_t prompt_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t forward_passes = 0;
  double forward_seconds = 0;         // wall time inside the runner (submit..finish)
  uint64_t resumed = 0;               // sequences rebuilt from their tokens after the runner was repaired
  uint64_t cached_prompt_tokens = 0;  // prompt tokens served from cached prefixes
  uint64_t cache_hits = 0;            // requests that reused a cached prefix
  int cache_entries = 0;              // sequences whose KV is kept for reuse
  uint64_t cache_positions = 0;       // their positions (KV rows per layer)
  SpecCounters speculation;           // draft tokens proposed and kept, verification passes
};

class Scheduler {
 public:
  // head, layers and tokenizer must outlive the scheduler. Starts the scheduler thread.
  Scheduler(ModelHead& head, LayerRunner& layers, const tokenizer::Tokenizer& tokenizer,
            const SchedulerOptions& options);
  // Stops the thread; requests still running end with "error" ("server shutting down").
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Throws baton::Error for an empty prompt, a prompt that leaves no room in
  // the context ("the prompt has N tokens but the context holds M"), an out-of-vocabulary id
  // or invalid sampling parameters; OverloadedError when the queue is full.
  std::shared_ptr<RequestHandle> submit(CompletionRequest request);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }
  int64_t n_ctx() const;

  // --- a runner that can be repaired (a dynamic cluster re-planning around a lost node) ---
  // Called on the scheduler thread when the runner fails (every unfinished pass is lost), with
  // the error. Returns true when the runner works again on fresh KV caches: every active
  // sequence is then rebuilt from its tokens (prompt + generated so far) and continues, so its
  // client sees a pause, not an error (greedy output is unchanged: the kernels are
  // batch-invariant). Returns false when the failure is not repairable (the sequences end with
  // the error), or throws baton::Error saying why the repair failed (they end with that).
  // Set it before the first submit().
  using RunnerRepair = std::function<bool(const std::string& error)>;
  void set_runner_repair(RunnerRepair repair);
  // --- the one idle mechanism: work on the runner's owner between passes ---
  // Runs `fn` on the scheduler thread once no pass is in flight (new passes wait) and returns
  // its result. When it returns true the runner's caches count as lost: every active sequence
  // is rebuilt from its tokens. Rethrows fn's exception; throws baton::Error when the
  // scheduler is stopping. Blocks; never call it from the scheduler thread (fn, the repair).
  bool run_exclusive(const std::function<bool()>& fn);
  // Runs `fn` on the scheduler thread at a moment no pass is in flight, without holding passes
  // back to make one (a pipeline's Stats round trip must not interleave with its passes, and
  // must not stall them either): false when no such moment came within `wait` or the scheduler
  // is stopping (fn not run). Rethrows fn's exception. Never call it from the scheduler thread.
  bool run_when_idle(const std::function<void()>& fn, std::chrono::milliseconds wait);
  // Replaces the runner (a re-plan loaded a new pipeline, or dropped it) with one of the same
  // n_ctx. Only on the scheduler thread with no pass in flight: inside run_exclusive's fn or the
  // runner repair; throws baton::Error otherwise. The old runner is not used again.
  void replace_runner(LayerRunner& layers);
  // While `reason` is not empty, submit() refuses new requests with UnavailableError(reason).
  void set_unavailable(const std::string& reason);

 private:
  struct Pass;  // one submitted micro-batch (scheduler.cpp)
  using Clock = std::chrono::steady_clock;
  struct Queued {
    std::shared_ptr<RequestHandle> handle;
    CompletionRequest request;
    Clock::time_point submitted;
  };

  // The scheduler thread and its steps; everything below `thread_` is touched only by it.
  void run();
  void admit();
  void drop_cancelled();
  void submit_passes();
  void finish_oldest_pass();
  // Ends a sequence: publishes its summary, frees its cache, removes it from active_.
  void end(ActiveSequence& seq, FinishReason reason, const std::string& error = {},
           ErrorKind kind = ErrorKind::kFailed);
  void fail_all(const std::string& error);
  // A runner failure: repair and rebuild the active sequences, or fail them all.
  void runner_failed(const std::string& error);
  void rebuild_active();
  // Runs the idle tasks waiting (their passes drained first when one asked for it); false when
  // none could run now.
  bool run_idle_tasks();
  void fail_idle_tasks(const std::string& message);
  void remove_ended();
  void shut_down();
  // A new sequence for `q`: a cached prefix's sequence id when one fits its prompt, else a new
  // id in a free KV slot (evicting the least recently used cached prefix when none is free).
  std::unique_ptr<ActiveSequence> start_sequence(Queued& q);
  // The runner lost its caches: cached prefixes are gone with them.
  void forget_cached_prefixes();
  void publish_cache_stats();
  // The server's speculation settings with the request's overrides (validated by submit()).
  SpecParams speculation_for(const CompletionRequest& request) const;

  ModelHead& head_;
  LayerRunner* layers_;  // replace_runner() swaps it between passes
  const tokenizer::Tokenizer& tokenizer_;
  SchedulerOptions options_;
  int64_t n_ctx_ = 0;
  int64_t n_vocab_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Queued> queue_;
  SchedulerStats stats_;
  std::string unavailable_;
  struct IdleTask;                    // scheduler_idle.cpp
  std::deque<IdleTask*> idle_tasks_;  // run_exclusive()/run_when_idle() tasks not started yet
  RunnerRepair repair_;
  std::thread thread_;

  uint64_t next_seq_id_ = 1;
  size_t rotation_ = 0;                                  // first decoder of the next step
  bool prefill_deferred_ = false;                        // a prompt chunk did not fit: it goes first next
  std::vector<std::unique_ptr<ActiveSequence>> active_;  // admission order
  PrefixCache prefix_cache_;                             // finished sequences' KV kept in idle slots
  std::deque<std::unique_ptr<Pass>> passes_;             // unfinished, oldest first
  std::vector<float> out_rows_;                          // [n_outputs, n_embd]
  std::vector<float> logits_;                            // [n_outputs, n_vocab]
};

}  // namespace baton::serving
