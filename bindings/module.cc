// shardloader._core: the C++ engine's Python module. Registration only; each
// class group lives in its own file, and the Python package wraps these
// objects in its public API.
#include <pybind11/pybind11.h>

namespace shardloader::bindings {
void RegisterFields(pybind11::module_& m);
void RegisterLoader(pybind11::module_& m);
void RegisterShards(pybind11::module_& m);
void RegisterSource(pybind11::module_& m);
void RegisterWriter(pybind11::module_& m);
}  // namespace shardloader::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "shardloader's C++ engine (use the shardloader package instead)";
  shardloader::bindings::RegisterSource(m);
  shardloader::bindings::RegisterFields(m);
  shardloader::bindings::RegisterLoader(m);
  shardloader::bindings::RegisterShards(m);
  shardloader::bindings::RegisterWriter(m);
}
