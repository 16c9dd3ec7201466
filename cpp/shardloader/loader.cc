#include "shardloader/loader.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/internal/batch_pool.h"
#include "shardloader/internal/stats_counters.h"
#include "shardloader/internal/pipeline.h"
#include "shardloader/io/open_source.h"
#include "shardloader/plan/epoch_plan.h"
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
        absl::StrCat("environment variable ", name, "='", text,
                     "' is not an integer"));
  }
  return value;
}

absl::Status Validate(const LoaderOptions& options) {
  if (options.fields.empty()) {
    return absl::InvalidArgumentError("fields: declare at least one field");
  }
  for (size_t i = 0; i < options.fields.size(); ++i) {
    SL_RETURN_IF_ERROR(options.fields[i].Validate());
    for (size_t j = 0; j < i; ++j) {
      if (options.fields[i].name == options.fields[j].name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fields: the name '", options.fields[i].name, "' is used twice"));
      }
    }
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be positive, got ", options.batch_size));
  }
  if (options.num_threads < 0 || options.num_io_threads < 1 ||
      options.prefetch_shards < 0 || options.prefetch_batches < 1) {
    return absl::InvalidArgumentError(
        "num_threads must be >= 0, num_io_threads and prefetch_batches >= 1, "
        "prefetch_shards >= 0");
  }
  return absl::OkStatus();
}

}  // namespace

// What runs: the decode arena, the batch pool and the current epoch.
class Loader::Engine {
 public:
  Engine(int num_threads, size_t num_fields, size_t pool_capacity, bool pin)
      : arena(num_threads),
        pool(internal_batch::BatchPool::Create(num_fields, pool_capacity, pin)) {}

  tbb::task_arena arena;
  std::shared_ptr<internal_batch::BatchPool> pool;
  std::shared_ptr<internal_stats::StatsCounters> stats =
      std::make_shared<internal_stats::StatsCounters>();
  std::shared_ptr<Pipeline> pipeline;  // guarded by Loader::mu_
};

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(LoaderOptions options) {
  SL_RETURN_IF_ERROR(Validate(options));
  if (!options.rank.has_value()) {
    SL_ASSIGN_OR_RETURN(std::optional<int> rank, EnvInt("RANK"));
    options.rank = rank.value_or(0);
  }
  if (!options.world_size.has_value()) {
    SL_ASSIGN_OR_RETURN(std::optional<int> world_size, EnvInt("WORLD_SIZE"));
    options.world_size = world_size.value_or(1);
  }
  SL_ASSIGN_OR_RETURN(std::vector<std::string> shards,
                      ResolveShards(options.shards));
  // Fails early for a bad rank, worker or too few shards.
  SL_RETURN_IF_ERROR(PlanShards(shards.size(),
                                {.rank = *options.rank,
                                 .world_size = *options.world_size,
                                 .worker = options.worker,
                                 .num_workers = options.num_workers})
                         .status());
  return std::unique_ptr<Loader>(
      new Loader(std::move(options), std::move(shards)));
}

Loader::Loader(LoaderOptions options, std::vector<std::string> shards)
    : options_(std::move(options)),
      shards_(std::move(shards)),
      creator_pid_(::getpid()),
      engine_(std::make_unique<Engine>(
          options_.num_threads > 0 ? options_.num_threads : AvailableCpus(),
          options_.fields.size(), options_.prefetch_batches + 2,
          options_.pin_memory)),
      epoch_(options_.epoch),
      sample_counts_(shards_.size()) {}

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
    return absl::FailedPreconditionError(absl::StrCat(
        "this Loader was created in process ", creator_pid_,
        " and cannot be used after fork(); create the Loader in the process "
        "that iterates it (e.g. inside a DataLoader worker)"));
  }
  if (closed_) return absl::FailedPreconditionError("the Loader is closed");
  return absl::OkStatus();
}

ReaderPosition Loader::Position() const {
  return {.seed = options_.seed,
          .epoch = epoch_,
          .rank = *options_.rank,
          .world_size = *options_.world_size,
          .worker = options_.worker,
          .num_workers = options_.num_workers,
          .shuffle = options_.shuffle};
}


absl::StatusOr<std::shared_ptr<Pipeline>> Loader::StartedPipeline() {
  absl::MutexLock lock(&mu_);
  SL_RETURN_IF_ERROR(CheckUsable());
  if (engine_->pipeline == nullptr) {
    SL_ASSIGN_OR_RETURN(std::vector<size_t> indices,
                        PlanShards(shards_.size(), Position()));
    internal_pipeline::PipelineConfig config{
        .shards = {},
        .fields = options_.fields,
        .batch_size = options_.batch_size,
        .drop_last = options_.drop_last,
        .shuffle_buffer_size = options_.shuffle ? options_.shuffle_buffer_size : 0,
        .shuffle_seed = SampleShuffleSeed(Position()),
        .seed = options_.seed,
        .epoch = epoch_,
        .num_io_threads = options_.num_io_threads,
        .prefetch_shards = options_.prefetch_shards,
        .prefetch_batches = options_.prefetch_batches,
        .source = options_.source,
        .stats = engine_->stats,
    };
    for (size_t index : indices) {
      config.shards.push_back(shards_[index]);
      config.shard_indices.push_back(static_cast<int64_t>(index));
    }
    engine_->pipeline = std::make_shared<Pipeline>(
        std::move(config), engine_->pool, &engine_->arena);
  }
  return engine_->pipeline;
}

absl::StatusOr<std::optional<Batch>> Loader::Next() {
  SL_ASSIGN_OR_RETURN(std::shared_ptr<Pipeline> pipeline, StartedPipeline());
  internal_stats::ScopedTimer timer(engine_->stats->consumer_wait_ns);
  return pipeline->Next();  // waits without holding mu_
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

void Loader::SetEpoch(int64_t epoch) {
  std::shared_ptr<Pipeline> old;
  {
    absl::MutexLock lock(&mu_);
    epoch_ = epoch;
    // After fork() the pipeline's threads live only in the parent.
    if (::getpid() != creator_pid_) return;
    old = std::move(engine_->pipeline);
  }
  if (old != nullptr) old->Stop();
  // `old` joins its threads when the last user lets go of it.
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
  SetEpoch(epoch());
}

absl::StatusOr<int64_t> Loader::NumSamples() {
  std::vector<size_t> indices;
  {
    absl::MutexLock lock(&mu_);
    SL_ASSIGN_OR_RETURN(indices,
                        PlanShards(shards_.size(), Position()));
  }
  int64_t total = 0;
  for (size_t index : indices) {
    {
      absl::MutexLock lock(&mu_);
      if (sample_counts_[index].has_value()) {
        total += *sample_counts_[index];
        continue;
      }
    }
    // Reads headers only; no lock is held across the I/O.
    SL_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source,
                        OpenSource(shards_[index],
                                   options_.source));
    SampleReader reader(std::move(source), std::vector<std::string>{});
    int64_t count = 0;
    Sample sample;
    while (true) {
      SL_ASSIGN_OR_RETURN(const bool read, reader.Next(&sample));
      if (!read) break;
      ++count;
    }
    absl::MutexLock lock(&mu_);
    sample_counts_[index] = count;
    total += count;
  }
  return total;
}

absl::StatusOr<int64_t> Loader::NumBatches() {
  SL_ASSIGN_OR_RETURN(const int64_t num_samples, NumSamples());
  const int64_t batch_size = options_.batch_size;
  return options_.drop_last ? num_samples / batch_size
                            : (num_samples + batch_size - 1) / batch_size;
}

}  // namespace shardloader
