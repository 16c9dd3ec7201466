#include "shardloader/loader.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/engine/batch_pool.h"
#include "shardloader/engine/dataset.h"
#include "shardloader/engine/pipeline.h"
#include "shardloader/engine/stats_counters.h"
#include "shardloader/internal/fork_safety.h"
#include "shardloader/plan/shard_list.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

using internal_pipeline::Pipeline;

int AvailableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

// Reads an integer environment variable; nullopt if unset.
absl::StatusOr<std::optional<int>> EnvInt(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, "='", text, "' is not an integer"));
  }
  return value;
}

int64_t TotalSamples(const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t count : counts) total += count;
  return total;
}

absl::Status Validate(const LoaderOptions& options) {
  if (options.fields.empty()) {
    return absl::InvalidArgumentError("fields: declare at least one field");
  }
  for (size_t i = 0; i < options.fields.size(); ++i) {
    SHARDLOADER_RETURN_IF_ERROR(options.fields[i].Validate());
    for (size_t j = 0; j < i; ++j) {
      if (options.fields[i].name == options.fields[j].name) {
        return absl::InvalidArgumentError(
            absl::StrCat("fields: the name '", options.fields[i].name, "' is used twice"));
      }
    }
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be positive, got ", options.batch_size));
  }
  for (const FieldSpec& field : options.fields) {
    SHARDLOADER_RETURN_IF_ERROR(field.ValidateBatch(options.batch_size));
  }
  if (options.num_threads < 0 || options.num_io_threads < 1 || options.prefetch_batches < 1 ||
      options.window_shards < 1) {
    return absl::InvalidArgumentError(
        "num_threads must be >= 0; num_io_threads, prefetch_batches and "
        "window_shards >= 1");
  }
  if (options.max_errors < 0 || options.max_error_fraction < 0 || options.max_error_fraction > 1) {
    return absl::InvalidArgumentError("max_errors must be >= 0 and max_error_fraction in [0, 1]");
  }
  return absl::OkStatus();
}

// TBB's process-wide state (its scheduler, worker threads and their spin
// locks) belongs to the process that first started a Loader here. A child
// forked from it inherits that state mid-flight: locks copied held, workers
// that do not exist there (arena initialisation then spins for ever, or
// crashes). Such a child decodes on plain threads instead.
bool TbbUsableHere() {
  static std::atomic<pid_t> owner{0};
  pid_t expected = 0;
  const pid_t self = ::getpid();
  return owner.compare_exchange_strong(expected, self) || expected == self;
}

}  // namespace

// What runs: the decode arena, the batch pool and the current epoch.
class Loader::Engine {
 public:
  Engine(std::shared_ptr<const LoaderOptions> options, std::vector<std::string> shards)
      : arena(options->num_threads > 0 ? options->num_threads : AvailableCpus()),
        pool(internal_batch::BatchPool::Create(options->fields.size(),
                                               options->prefetch_batches + 2, options->pin_memory)),
        dataset(std::make_shared<internal_pipeline::Dataset>(std::move(shards), std::move(options),
                                                             stats)) {}

  tbb::task_arena arena;  // initialised on first use, if at all
  tbb::task_arena* const usable_arena = TbbUsableHere() ? &arena : nullptr;
  std::shared_ptr<internal_batch::BatchPool> pool;
  std::shared_ptr<internal_stats::StatsCounters> stats =
      std::make_shared<internal_stats::StatsCounters>();
  std::shared_ptr<internal_pipeline::Dataset> dataset;
  std::shared_ptr<Pipeline> pipeline;  // guarded by Loader::mu_
};

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(LoaderOptions options) {
  // Before this Loader starts threads: a child forked while they run can
  // then create a Loader of its own (internal/fork_safety.h).
  internal_fork::InitForFork();
  SHARDLOADER_RETURN_IF_ERROR(Validate(options));
  if (!options.rank.has_value()) {
    SHARDLOADER_ASSIGN_OR_RETURN(std::optional<int> rank, EnvInt("RANK"));
    options.rank = rank.value_or(0);
  }
  if (!options.world_size.has_value()) {
    SHARDLOADER_ASSIGN_OR_RETURN(std::optional<int> world_size, EnvInt("WORLD_SIZE"));
    options.world_size = world_size.value_or(1);
  }
  std::vector<std::string> warnings;
  SHARDLOADER_ASSIGN_OR_RETURN(std::vector<std::string> shards,
                               ResolveShards(options.shards, options.source, &warnings));
  // Fails early for a bad rank or worker.
  SHARDLOADER_RETURN_IF_ERROR(RankSchedule::Create({.rank = *options.rank,
                                                    .world_size = *options.world_size,
                                                    .worker = options.worker,
                                                    .num_workers = options.num_workers,
                                                    .batch_size = options.batch_size})
                                  .status());
  auto loader = std::unique_ptr<Loader>(new Loader(std::move(options), std::move(shards)));
  loader->shard_warnings_ = std::move(warnings);
  return loader;
}

Loader::Loader(LoaderOptions options, std::vector<std::string> shards)
    : options_(std::make_shared<const LoaderOptions>(std::move(options))),
      shards_(shards),
      creator_pid_(::getpid()),
      engine_(std::make_unique<Engine>(options_, std::move(shards))),
      epoch_(options_->epoch) {}

Loader::~Loader() {
  if (::getpid() != creator_pid_) {
    // After fork() the threads exist only in the parent: joining them here
    // would hang, so the child leaves them alone.
    (void)engine_.release();
    return;
  }
  Close();
}

absl::Status Loader::CheckUsable() const {
  if (::getpid() != creator_pid_) {
    return absl::FailedPreconditionError(
        absl::StrCat("this Loader was created in process ", creator_pid_,
                     " and cannot be used after fork(); create the Loader in the process "
                     "that iterates it (e.g. inside a DataLoader worker)"));
  }
  if (closed_) return absl::FailedPreconditionError("the Loader is closed");
  return absl::OkStatus();
}

struct Loader::Counting {
  absl::Mutex mu;
  std::optional<absl::StatusOr<std::vector<int64_t>>> result ABSL_GUARDED_BY(mu);

  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return result.has_value(); }
};

std::shared_ptr<Loader::Counting> Loader::StartedCounting() {
  absl::MutexLock lock(&mu_);
  if (counting_ == nullptr) {
    counting_ = std::make_shared<Counting>();
    // Counting reads index files or shard headers (once; the dataset keeps
    // the counts), on a detached thread like the pipeline's own count: no
    // lock is held across it, and nobody has to join it.
    std::thread([counting = counting_, dataset = engine_->dataset] {
      absl::StatusOr<std::vector<int64_t>> counts = dataset->Counts();
      absl::MutexLock lock(&counting->mu);
      counting->result = std::move(counts);
    }).detach();
  }
  return counting_;
}

bool Loader::WaitCounted(absl::Duration timeout) {
  const std::shared_ptr<Counting> counting = StartedCounting();
  absl::MutexLock lock(&counting->mu);
  return counting->mu.AwaitWithTimeout(absl::Condition(counting.get(), &Counting::Done), timeout);
}

absl::StatusOr<std::vector<int64_t>> Loader::Counts() {
  const std::shared_ptr<Counting> counting = StartedCounting();
  absl::StatusOr<std::vector<int64_t>> counts;
  {
    absl::MutexLock lock(&counting->mu);
    counting->mu.Await(absl::Condition(counting.get(), &Counting::Done));
    counts = *counting->result;
  }
  if (!counts.ok()) {
    // The error may be transient (a network failure): the next call counts
    // again.
    absl::MutexLock lock(&mu_);
    if (counting_ == counting) counting_ = nullptr;
  }
  return counts;
}

absl::StatusOr<RankSchedule> Loader::Schedule() {
  SHARDLOADER_ASSIGN_OR_RETURN(const std::vector<int64_t> counts, Counts());
  absl::MutexLock lock(&mu_);
  return Schedule(TotalSamples(counts));
}

ScheduleOptions Loader::ReaderSchedule() const {
  return {.start = start_,
          .rank = *options_->rank,
          .world_size = *options_->world_size,
          .worker = options_->worker,
          .num_workers = options_->num_workers,
          .batch_size = options_->batch_size,
          .drop_last = options_->drop_last,
          .remainder = options_->remainder};
}

absl::StatusOr<RankSchedule> Loader::Schedule(int64_t num_samples) const {
  ScheduleOptions options = ReaderSchedule();
  options.num_samples = num_samples;
  return RankSchedule::Create(options);
}

absl::StatusOr<std::shared_ptr<Pipeline>> Loader::StartedPipeline() {
  absl::MutexLock lock(&mu_);
  SHARDLOADER_RETURN_IF_ERROR(CheckUsable());
  if (engine_->pipeline != nullptr) return engine_->pipeline;
  resumed_ = false;
  engine_->pipeline = std::make_shared<Pipeline>(
      internal_pipeline::PipelineConfig{
          .options = options_,
          .dataset = engine_->dataset,
          .epoch = epoch_,
          .schedule = ReaderSchedule(),
          .stats = engine_->stats,
      },
      engine_->pool, engine_->usable_arena);
  return engine_->pipeline;
}

absl::StatusOr<std::optional<Batch>> Loader::Next() {
  SHARDLOADER_ASSIGN_OR_RETURN(std::shared_ptr<Pipeline> pipeline, StartedPipeline());
  absl::StatusOr<std::optional<Batch>> batch;
  {
    internal_stats::ScopedTimer timer(engine_->stats->consumer_wait_ns);
    batch = pipeline->Next();  // waits without holding mu_
  }
  if (batch.ok() && batch->has_value()) {
    absl::MutexLock lock(&mu_);
    if (engine_->pipeline == pipeline) ++batches_yielded_;
  }
  return batch;
}

bool Loader::WaitReady(absl::Duration timeout) {
  absl::StatusOr<std::shared_ptr<Pipeline>> pipeline = StartedPipeline();
  if (!pipeline.ok()) return true;  // an error is ready: Next() reports it
  internal_stats::ScopedTimer timer(engine_->stats->consumer_wait_ns);
  return (*pipeline)->WaitReady(timeout);
}

LoaderStats Loader::Stats() const {
  const internal_stats::StatsCounters& c = *engine_->stats;
  auto load = [](const std::atomic<int64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  LoaderStats stats{
      .num_shards_opened = load(c.num_shards_opened),
      .num_samples_read = load(c.num_samples_read),
      .num_bytes_read = load(c.num_bytes_read),
      .num_batches = load(c.num_batches),
      .num_samples_decoded = load(c.num_samples_decoded),
      .num_errors = load(c.num_errors),
      .num_skipped = load(c.num_skipped),
      .skipped = c.Skipped(),
      .read_busy = absl::Nanoseconds(load(c.read_busy_ns)),
      .decode_busy = absl::Nanoseconds(load(c.decode_busy_ns)),
      .consumer_wait = absl::Nanoseconds(load(c.consumer_wait_ns)),
      .batch_slots_created = engine_->pool->num_created(),
  };
  absl::MutexLock lock(&mu_);
  if (engine_->pipeline != nullptr) {
    stats.ready_queue_depth = static_cast<int64_t>(engine_->pipeline->num_ready());
  }
  return stats;
}

void Loader::Reposition(int64_t epoch, int64_t start) {
  std::shared_ptr<Pipeline> old;
  {
    absl::MutexLock lock(&mu_);
    epoch_ = epoch;
    start_ = start;
    batches_yielded_ = 0;
    // After fork() the pipeline's threads live only in the parent.
    if (::getpid() != creator_pid_) return;
    old = std::move(engine_->pipeline);
  }
  if (old != nullptr) old->Stop();
  // `old` joins its threads when the last user lets go of it.
}

void Loader::SetEpoch(int64_t epoch) {
  {
    absl::MutexLock lock(&mu_);
    // A resumed position survives the usual set_epoch() at the top of the
    // resumed epoch.
    if (resumed_ && epoch == epoch_) return;
    resumed_ = false;
  }
  Reposition(epoch, 0);
}

void Loader::Restart() { SetEpoch(epoch()); }

int64_t Loader::epoch() const {
  absl::MutexLock lock(&mu_);
  return epoch_;
}

void Loader::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  Reposition(epoch(), 0);
}

absl::StatusOr<LoaderState> Loader::State() {
  SHARDLOADER_ASSIGN_OR_RETURN(const RankSchedule schedule, Schedule());
  absl::MutexLock lock(&mu_);
  // This reader's batch j is rank batch worker + j * num_workers.
  const int64_t rank_batches =
      batches_yielded_ == 0 ? 0
                            : options_->worker + (batches_yielded_ - 1) * options_->num_workers + 1;
  return LoaderState{.epoch = epoch_,
                     .position = schedule.PositionAfter(rank_batches),
                     .num_samples = schedule.options().num_samples,
                     .seed = options_->seed,
                     .shuffle = options_->shuffle,
                     .window_shards = options_->window_shards};
}

absl::Status Loader::Resume(const LoaderState& state) {
  SHARDLOADER_ASSIGN_OR_RETURN(const std::vector<int64_t> counts, Counts());
  const int64_t num_samples = TotalSamples(counts);
  if (state.num_samples != num_samples || state.seed != options_->seed ||
      state.shuffle != options_->shuffle ||
      (state.shuffle && state.window_shards != options_->window_shards)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this state belongs to another order: it was saved with ", state.num_samples,
        " samples, seed ", state.seed, ", shuffle ", state.shuffle, ", window_shards ",
        state.window_shards, "; this Loader has ", num_samples, " samples, seed ", options_->seed,
        ", shuffle ", options_->shuffle, ", window_shards ", options_->window_shards));
  }
  if (state.position < 0 || state.position > num_samples) {
    return absl::InvalidArgumentError(
        absl::StrCat("state position ", state.position, " is not in [0, ", num_samples, "]"));
  }
  Reposition(state.epoch, state.position);
  absl::MutexLock lock(&mu_);
  resumed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Loader::NumSamples() {
  SHARDLOADER_ASSIGN_OR_RETURN(const RankSchedule schedule, Schedule());
  int64_t mine = 0;
  for (int64_t j = 0; j < schedule.num_batches(); ++j) mine += schedule.Batch(j).size;
  return mine;
}

absl::StatusOr<int64_t> Loader::NumBatches() {
  SHARDLOADER_ASSIGN_OR_RETURN(const RankSchedule schedule, Schedule());
  return schedule.num_batches();
}

}  // namespace shardloader
