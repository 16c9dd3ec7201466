#include "shardloader/engine/pipeline.h"

#include <algorithm>

#include "shardloader/engine/assembler.h"

namespace shardloader::internal_pipeline {

namespace {

std::vector<std::string> WantedExtensions(const std::vector<FieldSpec>& fields) {
  std::vector<std::string> extensions;
  for (const FieldSpec& field : fields) {
    extensions.insert(extensions.end(), field.extensions.begin(), field.extensions.end());
  }
  return extensions;
}

}  // namespace

struct Pipeline::Counting {
  absl::Mutex mu;
  std::optional<absl::StatusOr<std::vector<int64_t>>> result ABSL_GUARDED_BY(mu);
  bool stopped ABSL_GUARDED_BY(mu) = false;
};

Pipeline::Pipeline(PipelineConfig config, std::shared_ptr<internal_batch::BatchPool> pool,
                   tbb::task_arena* arena)
    : config_(std::move(config)),
      order_{.seed = config_.options->seed,
             .epoch = config_.epoch,
             .shuffle = config_.options->shuffle,
             .window_shards = config_.options->window_shards},
      pool_(std::move(pool)),
      arena_(arena),
      sample_pool_(std::make_shared<SamplePool>(
          static_cast<size_t>(std::max<int64_t>(2 * config_.schedule.batch_size, 256)))),
      ready_(config_.options->prefetch_batches),
      counting_(std::make_shared<Counting>()),
      assembler_([this] { Assemble(); }) {}

Pipeline::~Pipeline() {
  Stop();
  assembler_.join();
}

void Pipeline::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    if (readers_ != nullptr) readers_->Stop();
  }
  {
    absl::MutexLock lock(&counting_->mu);
    counting_->stopped = true;
  }
  ready_.Close();
}

bool Pipeline::Start() {
  std::thread([counting = counting_, dataset = config_.dataset] {
    absl::StatusOr<std::vector<int64_t>> result = dataset->Counts();
    absl::MutexLock lock(&counting->mu);
    counting->result = std::move(result);
  }).detach();
  absl::StatusOr<std::vector<int64_t>> counts;
  {
    Counting& c = *counting_;
    absl::MutexLock lock(&c.mu);
    auto done = [&c]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) {
      return c.stopped || c.result.has_value();
    };
    c.mu.Await(absl::Condition(&done));
    if (c.stopped) return false;
    counts = *std::move(c.result);
  }
  if (!counts.ok()) {
    Fail(counts.status());
    return false;
  }
  ScheduleOptions options = config_.schedule;
  options.num_samples = 0;
  for (int64_t count : *counts) options.num_samples += count;
  absl::StatusOr<RankSchedule> schedule = RankSchedule::Create(options);
  if (!schedule.ok()) {
    Fail(schedule.status());
    return false;
  }
  int64_t reader_samples = 0;
  for (int64_t j = 0; j < schedule->num_batches(); ++j) {
    reader_samples += schedule->Batch(j).size;
  }
  const std::vector<std::string> wanted = WantedExtensions(config_.options->fields);
  bad_samples_ = std::make_unique<BadSamples>(
      config_.options, config_.epoch,
      std::max<int64_t>(config_.options->max_errors,
                        static_cast<int64_t>(config_.options->max_error_fraction * reader_samples)),
      config_.dataset, *counts, wanted, config_.stats);
  absl::MutexLock lock(&mu_);
  if (stopped_) return false;
  readers_ = std::make_unique<BatchReaders>(BatchReadersConfig{.options = config_.options,
                                                               .dataset = config_.dataset,
                                                               .counts = *std::move(counts),
                                                               .order = order_,
                                                               .schedule = *schedule,
                                                               .wanted_extensions = wanted,
                                                               .sample_pool = sample_pool_});
  return true;
}

absl::StatusOr<std::optional<Batch>> Pipeline::Next() {
  std::optional<absl::StatusOr<Batch>> item = ready_.Pop();
  if (!item.has_value()) return std::nullopt;
  if (!item->ok()) return item->status();
  return std::move(**item);
}

bool Pipeline::WaitReady(absl::Duration timeout) { return ready_.WaitPoppable(timeout); }

void Pipeline::Fail(absl::Status error) {
  internal_stats::StatsCounters::Add(config_.stats->num_errors, 1);
  ready_.Push(std::move(error));
  ready_.Close();
}

void Pipeline::Assemble() {
  using internal_stats::StatsCounters;
  if (!Start()) {
    ready_.Close();
    return;
  }
  BatchReaders* readers = nullptr;
  {
    absl::MutexLock lock(&mu_);
    readers = readers_.get();  // lives as long as this pipeline
  }
  for (int64_t j = 0; j < readers->num_batches(); ++j) {
    std::optional<ReadBatch> read = readers->Pop(j);
    if (!read.has_value()) break;  // stopped
    absl::StatusOr<Batch> batch;
    {
      internal_stats::ScopedTimer timer(config_.stats->decode_busy_ns);
      batch = AssembleBatch(
          config_.options->fields, absl::MakeSpan(read->samples), read->errors, pool_->Acquire(),
          arena_,
          config_.options->num_threads > 0 ? config_.options->num_threads
                                           : static_cast<int>(std::thread::hardware_concurrency()),
          order_, [&](size_t row, const absl::Status& error, int* tries, Sample* sample) {
            return bad_samples_->Replace(read->positions[row], error, tries, sample);
          });
    }
    if (!batch.ok()) {
      Fail(batch.status());
      return;
    }
    StatsCounters::Add(config_.stats->num_batches, 1);
    StatsCounters::Add(config_.stats->num_samples_decoded,
                       static_cast<int64_t>(read->samples.size()));
    sample_pool_->Give(read->samples);
    if (!ready_.Push(*std::move(batch))) break;
  }
  ready_.Close();
}

}  // namespace shardloader::internal_pipeline
