// Bindings of SourceOptions (how shards are opened and read, local or
// remote) and of the remote-shard helpers: positional reads, prefix listing,
// cache prefetch. Durations are float seconds in Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bindings/status.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/io/random_access.h"

namespace py = pybind11;

namespace shardloader::bindings {
namespace {

// A read/write property in float seconds over an absl::Duration member.
template <absl::Duration SourceOptions::*member>
void DefSeconds(py::class_<SourceOptions>& cls, const char* name, const char* doc) {
  cls.def_property(
      name, [](const SourceOptions& o) { return absl::ToDoubleSeconds(o.*member); },
      [](SourceOptions& o, double seconds) { o.*member = absl::Seconds(seconds); }, doc);
}

// Every field but credentials (SourceOptions holds none; they come from the
// environment), so the repr can never show a secret.
std::string Repr(const SourceOptions& o) {
  return absl::StrCat("SourceOptions(memory_map=", o.memory_map ? "True" : "False",
                      ", part_size_bytes=", o.part_size_bytes,
                      ", max_concurrency=", o.max_concurrency, ", max_attempts=", o.max_attempts,
                      ", endpoint_url='", o.endpoint_url, "', region='", o.region, "', profile='",
                      o.profile, "', anonymous=", o.anonymous ? "True" : "False", ", ca_bundle='",
                      o.ca_bundle, "', cache_dir='", o.cache_dir,
                      "', cache_limit_bytes=", o.cache_limit_bytes, ")");
}

}  // namespace

void RegisterSource(py::module_& m) {
  py::class_<SourceOptions> options(m, "SourceOptions");
  options.def(py::init<>())
      .def_readwrite("block_size_bytes", &SourceOptions::block_size_bytes,
                     "Read size for streaming local files, in bytes (default 1 MiB).")
      .def_readwrite("max_unseekable_bytes", &SourceOptions::max_unseekable_bytes,
                     "Pipes and FIFOs opened for positional reads are held in memory whole; longer "
                     "ones are refused (bytes, default 1 GiB).")
      .def_readwrite("memory_map", &SourceOptions::memory_map,
                     "Memory-map regular local files for positional reads (default True); False "
                     "reads with pread(2).")
      .def_readwrite("part_size_bytes", &SourceOptions::part_size_bytes,
                     "Remote shards are read as ranged GETs of this many bytes (default 8 MiB); "
                     "also the S3 multipart part size (at least 5 MiB).")
      .def_readwrite("max_concurrency", &SourceOptions::max_concurrency,
                     "Ranged GETs in flight per remote shard (default 8).")
      .def_readwrite("max_attempts", &SourceOptions::max_attempts,
                     "Tries in all for a transient remote failure (connection errors, 5xx, 429, "
                     "timeouts; default 8).")
      .def_readwrite("low_speed_bytes_per_s", &SourceOptions::low_speed_bytes_per_s,
                     "A transfer slower than this (bytes/s, default 1024) for low_speed_time_s is "
                     "dropped and resumed.")
      .def_readwrite("endpoint_url", &SourceOptions::endpoint_url,
                     "An S3-compatible endpoint ('http://127.0.0.1:9000'); empty: "
                     "AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS.")
      .def_readwrite(
          "region", &SourceOptions::region,
          "S3 region; empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's, else us-east-1.")
      .def_readwrite("profile", &SourceOptions::profile,
                     "Profile of the shared AWS files; empty: AWS_PROFILE, else 'default'. "
                     "Credentials are never options.")
      .def_readwrite("anonymous", &SourceOptions::anonymous,
                     "Send unsigned S3 requests (public buckets; default False).")
      .def_readwrite("ca_bundle", &SourceOptions::ca_bundle,
                     "PEM file of the CA certificates https:// servers are verified against; "
                     "empty: the system's store.")
      .def_readwrite("cache_dir", &SourceOptions::cache_dir,
                     "Local directory caching remote shards (fetched whole, then read locally); "
                     "empty: no cache.")
      .def_readwrite("cache_limit_bytes", &SourceOptions::cache_limit_bytes,
                     "Bytes the cache may hold (least recently used shards evicted); 0: no limit.")
      .def("__repr__", &Repr);
  DefSeconds<&SourceOptions::initial_backoff>(
      options, "initial_backoff_s", "First retry backoff, seconds (default 0.1), doubled per try.");
  DefSeconds<&SourceOptions::max_backoff>(options, "max_backoff_s",
                                          "Longest retry backoff, seconds (default 10).");
  DefSeconds<&SourceOptions::connect_timeout>(options, "connect_timeout_s",
                                              "Connection timeout, seconds (default 10).");
  DefSeconds<&SourceOptions::low_speed_time>(
      options, "low_speed_time_s",
      "How long a transfer may stay under low_speed_bytes_per_s, seconds (default 30).");

  py::class_<RandomAccessSource, std::shared_ptr<RandomAccessSource>>(
      m, "RandomAccessSource", "Positional reads of one shard (local or remote); thread-safe.")
      .def_property_readonly("uri", &RandomAccessSource::uri)
      .def_property_readonly("size", &RandomAccessSource::size)
      .def(
          "read_at",
          [](const RandomAccessSource& source, int64_t offset, size_t size) {
            std::string bytes(size, '\0');
            WithoutGil([&] { return source.ReadAt(offset, size, bytes.data()); });
            return py::bytes(bytes);
          },
          py::arg("offset"), py::arg("size"));

  m.def(
      "open_random_access",
      [](const std::string& uri, const SourceOptions& o) {
        return WithoutGil([&] { return OpenRandomAccess(uri, o); });
      },
      py::arg("uri"), py::arg("options") = SourceOptions());
  m.def(
      "read_stream",
      [](const std::string& uri, const SourceOptions& o) {
        std::string bytes = WithoutGil([&]() -> absl::StatusOr<std::string> {
          absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(uri, o);
          if (!source.ok()) return source.status();
          std::string all;
          std::string block(1 << 20, '\0');
          while (true) {
            absl::StatusOr<size_t> n = (*source)->Read(block.data(), block.size());
            if (!n.ok()) return n.status();
            if (*n == 0) return all;
            all.append(block.data(), *n);
          }
        });
        return py::bytes(bytes);
      },
      py::arg("uri"), py::arg("options") = SourceOptions(),
      "All bytes of a shard through OpenSource() (remote: parallel ranged GETs).");
  m.def(
      "list_prefix",
      [](const std::string& uri, const SourceOptions& o) {
        return WithoutGil([&] { return ListPrefix(uri, o); });
      },
      py::arg("uri"), py::arg("options") = SourceOptions());
  m.def(
      "prefetch_shard",
      [](const std::string& uri, const SourceOptions& o) {
        WithoutGil([&] { return PrefetchShard(uri, o); });
      },
      py::arg("uri"), py::arg("options") = SourceOptions());
}

}  // namespace shardloader::bindings
