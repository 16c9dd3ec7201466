// LoaderOptions and Loader. Every wait releases the GIL (CallWithoutGil,
// status.h) and wakes every 100 ms to let Python handle signals, so Ctrl-C
// stops a blocked iteration, count or state.
#include "shardloader/loader.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/time/time.h"
#include "bindings/batch.h"
#include "bindings/status.h"

namespace shardloader::bindings {

namespace py = pybind11;

namespace {

constexpr absl::Duration kSignalPollInterval = absl::Milliseconds(100);

py::object NextBatch(Loader& loader) {
  // One GIL release per batch: wait and take the batch in the same window.
  std::optional<absl::StatusOr<std::optional<Batch>>> result;
  while (!result.has_value()) {
    result = CallWithoutGil([&]() -> std::optional<absl::StatusOr<std::optional<Batch>>> {
      if (loader.WaitReady(kSignalPollInterval)) return loader.Next();
      return std::nullopt;
    });
    if (!result.has_value() && PyErr_CheckSignals() != 0) {
      throw py::error_already_set();
    }
  }
  std::optional<Batch> value = Unwrap(*std::move(result));
  if (!value.has_value()) return py::none();
  return BatchToPython(*value);
}

// Waits until the loader's samples are counted (or counting failed), so
// that what follows does not block; Ctrl-C interrupts the wait.
void WaitCounted(Loader& loader) {
  while (!CallWithoutGil([&] { return loader.WaitCounted(kSignalPollInterval); })) {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

// Calls fn(), a method that needs the sample counts, once they are known.
template <typename Fn>
auto Counted(Loader& loader, Fn&& fn) {
  WaitCounted(loader);
  return WithoutGil(std::forward<Fn>(fn));
}

// Joining the loader's threads may wait for a batch being decoded: let
// other Python threads run meanwhile.
struct GilReleasingDelete {
  void operator()(Loader* loader) const {
    py::gil_scoped_release release;
    delete loader;
  }
};
using LoaderHolder = std::unique_ptr<Loader, GilReleasingDelete>;

}  // namespace

void RegisterLoader(py::module_& m) {
  py::enum_<Remainder>(m, "Remainder")
      .value("PAD", Remainder::kPad)
      .value("DROP", Remainder::kDrop);
  py::enum_<OnError>(m, "OnError").value("RAISE", OnError::kRaise).value("SKIP", OnError::kSkip);

  py::class_<LoaderState>(m, "LoaderState")
      .def(py::init<>())
      .def_readwrite("epoch", &LoaderState::epoch)
      .def_readwrite("position", &LoaderState::position)
      .def_readwrite("num_samples", &LoaderState::num_samples)
      .def_readwrite("seed", &LoaderState::seed)
      .def_readwrite("shuffle", &LoaderState::shuffle)
      .def_readwrite("window_shards", &LoaderState::window_shards);

  py::class_<SkippedSample>(m, "SkippedSample")
      .def_readonly("uri", &SkippedSample::uri)
      .def_readonly("offset", &SkippedSample::offset)
      .def_readonly("key", &SkippedSample::key)
      .def_readonly("error", &SkippedSample::error);

  py::class_<LoaderOptions>(m, "LoaderOptions")
      .def(py::init<>())
      .def_readwrite("shards", &LoaderOptions::shards)
      .def_readwrite("fields", &LoaderOptions::fields)
      .def_readwrite("batch_size", &LoaderOptions::batch_size)
      .def_readwrite("drop_last", &LoaderOptions::drop_last)
      .def_readwrite("shuffle", &LoaderOptions::shuffle)
      .def_readwrite("seed", &LoaderOptions::seed)
      .def_readwrite("epoch", &LoaderOptions::epoch)
      .def_readwrite("window_shards", &LoaderOptions::window_shards)
      .def_readwrite("remainder", &LoaderOptions::remainder)
      .def_readwrite("on_error", &LoaderOptions::on_error)
      .def_readwrite("max_errors", &LoaderOptions::max_errors)
      .def_readwrite("max_error_fraction", &LoaderOptions::max_error_fraction)
      .def_readwrite("rank", &LoaderOptions::rank)
      .def_readwrite("world_size", &LoaderOptions::world_size)
      .def_readwrite("worker", &LoaderOptions::worker)
      .def_readwrite("num_workers", &LoaderOptions::num_workers)
      .def_readwrite("num_threads", &LoaderOptions::num_threads)
      .def_readwrite("num_io_threads", &LoaderOptions::num_io_threads)
      .def_readwrite("prefetch_batches", &LoaderOptions::prefetch_batches)
      .def_readwrite("source", &LoaderOptions::source)
      .def_readwrite("pin_memory", &LoaderOptions::pin_memory);

  auto seconds = [](absl::Duration LoaderStats::*member) {
    return [member](const LoaderStats& s) { return absl::ToDoubleSeconds(s.*member); };
  };
  py::class_<LoaderStats>(m, "LoaderStats")
      .def_readonly("num_shards_opened", &LoaderStats::num_shards_opened)
      .def_readonly("num_samples_read", &LoaderStats::num_samples_read)
      .def_readonly("num_bytes_read", &LoaderStats::num_bytes_read)
      .def_readonly("num_batches", &LoaderStats::num_batches)
      .def_readonly("num_samples_decoded", &LoaderStats::num_samples_decoded)
      .def_readonly("num_errors", &LoaderStats::num_errors)
      .def_readonly("num_skipped", &LoaderStats::num_skipped)
      .def_readonly("skipped", &LoaderStats::skipped)
      .def_property_readonly("read_busy_s", seconds(&LoaderStats::read_busy))
      .def_property_readonly("decode_busy_s", seconds(&LoaderStats::decode_busy))
      .def_property_readonly("consumer_wait_s", seconds(&LoaderStats::consumer_wait))
      .def_readonly("ready_queue_depth", &LoaderStats::ready_queue_depth)
      .def_readonly("batch_slots_created", &LoaderStats::batch_slots_created)
      .def("summary", &LoaderStats::Summary);

  py::class_<Loader, LoaderHolder>(m, "Loader")
      .def(py::init([](LoaderOptions options) {
             return LoaderHolder(
                 WithoutGil([&] { return Loader::Create(std::move(options)); }).release());
           }),
           py::arg("options"))
      .def("next", &NextBatch)
      .def(
          "set_epoch",
          [](Loader& loader, int64_t epoch) { CallWithoutGil([&] { loader.SetEpoch(epoch); }); },
          py::arg("epoch"))
      .def("restart", [](Loader& loader) { CallWithoutGil([&] { loader.Restart(); }); })
      .def_property_readonly("epoch", &Loader::epoch)
      .def("num_samples",
           [](Loader& loader) { return Counted(loader, [&] { return loader.NumSamples(); }); })
      .def("num_batches",
           [](Loader& loader) { return Counted(loader, [&] { return loader.NumBatches(); }); })
      .def("state", [](Loader& loader) { return Counted(loader, [&] { return loader.State(); }); })
      .def(
          "resume",
          [](Loader& loader, const LoaderState& state) {
            Counted(loader, [&] { return loader.Resume(state); });
          },
          py::arg("state"))
      .def("stats", &Loader::Stats)
      .def("close", [](Loader& loader) { CallWithoutGil([&] { loader.Close(); }); })
      .def_property_readonly("shards", &Loader::shards)
      .def_property_readonly("shard_warnings", &Loader::shard_warnings)
      .def_property_readonly("rank", [](const Loader& l) { return *l.options().rank; })
      .def_property_readonly("world_size", [](const Loader& l) { return *l.options().world_size; });
}

}  // namespace shardloader::bindings
