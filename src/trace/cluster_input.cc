// Reader of JSON cluster specs (fairgpu/cluster.h), in either form:
//   node list: {"nodes": [{"name": "n0", "gpu_type": "v100", "gpus": 4,
//                          "cpus": 32, "memory_gb": 256}, ...]}
//   compact:   {"k80": {"nodes": 9, "gpus_per_node": 4, "cpus_per_node": 32,
//                       "memory_gb_per_node": 256}, ...}
// A top-level "nodes" holding an array selects the node list. GPU types keep
// their order of first appearance; unnamed nodes are "<type>-<i>", i counting
// that type's nodes from 0 (as in default_cluster()). Every error names the
// field's path (nodes[2].gpus, k80.gpus_per_node).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/input_error.h"
#include "text_input.h"

namespace fairgpu {

namespace {

using nlohmann::ordered_json;
using text_input::child;
using text_input::element;

// Bounds that keep GPU counts in an int and catch typos (40000 for 4).
constexpr std::int64_t kMaxGpusPerNode = 4096;
constexpr std::int64_t kMaxNodesPerType = 100000;

class ClusterParser : private text_input::JsonReader {
 public:
  explicit ClusterParser(const std::string& source) : JsonReader(source) {}

  Cluster parse(const ordered_json& doc) {
    if (!doc.is_object())
      fail("(top level)", std::string("expected an object, got ") + doc.type_name());
    auto nodes = doc.find("nodes");
    if (nodes != doc.end() && nodes->is_array())
      read_node_list(doc, *nodes);
    else
      read_compact(doc);
    if (cluster_.nodes.empty()) fail(node_list_ ? "nodes" : "(top level)", "the cluster is empty");
    return std::move(cluster_);
  }

 private:
  // A whole number in [1, max].
  int count(const ordered_json& j, const std::string& path, std::int64_t max) const {
    double v = number(j, path);
    if (v != std::floor(v)) fail(path, "must be a whole number, got " + j.dump());
    if (v < 1) fail(path, "must be >= 1, got " + j.dump());
    if (v > static_cast<double>(max))
      fail(path, "must be at most " + std::to_string(max) + ", got " + j.dump());
    return static_cast<int>(v);
  }

  std::size_t type_of(const std::string& gpu_type) {
    if (auto t = cluster_.type_index(gpu_type)) return *t;
    cluster_.gpu_types.push_back(gpu_type);
    per_type_.push_back(0);
    return cluster_.gpu_types.size() - 1;
  }

  void add_node(const std::string& path, std::string node_name, std::size_t type, int gpus,
                double cpus, double memory_gb) {
    if (node_name.empty())
      node_name = cluster_.gpu_types[type] + "-" + std::to_string(per_type_[type]);
    ++per_type_[type];
    if (!names_.insert(node_name).second) fail(path, "duplicate node name '" + node_name + "'");
    total_gpus_ += gpus;
    if (total_gpus_ > INT32_MAX) fail(path, "the cluster has more GPUs than fairgpu can count");
    cluster_.nodes.push_back(Node{std::move(node_name), type, gpus, cpus, memory_gb});
  }

  void read_node_list(const ordered_json& doc, const ordered_json& nodes) {
    node_list_ = true;
    only_keys(doc, "", {"nodes"});
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const ordered_json& n = nodes[i];
      std::string path = element("nodes", i);
      if (!n.is_object()) fail(path, std::string("expected a node object, got ") + n.type_name());
      only_keys(n, path, {"name", "gpu_type", "gpus", "cpus", "memory_gb"});
      auto required = [&](const char* key) -> const ordered_json& {
        return JsonReader::required(n, path, key);
      };
      std::string node_name;
      std::string name_path = child(path, "name");
      if (auto it = n.find("name"); it != n.end()) node_name = name(*it, name_path);
      std::size_t type = type_of(name(required("gpu_type"), child(path, "gpu_type")));
      int gpus = count(required("gpus"), child(path, "gpus"), kMaxGpusPerNode);
      double cpus = 0.0, memory_gb = 0.0;
      if (auto it = n.find("cpus"); it != n.end()) cpus = non_negative(*it, child(path, "cpus"));
      if (auto it = n.find("memory_gb"); it != n.end())
        memory_gb = non_negative(*it, child(path, "memory_gb"));
      add_node(node_name.empty() ? path : name_path, node_name, type, gpus, cpus, memory_gb);
    }
  }

  void read_compact(const ordered_json& doc) {
    for (const auto& [gpu_type, spec] : doc.items()) {
      const std::string& path = gpu_type;
      if (!spec.is_object())
        fail(path, std::string("expected an object with nodes and gpus_per_node (or give "
                               "{\"nodes\": [...]}), got ") +
                       spec.type_name());
      name(ordered_json(gpu_type), path.empty() ? "\"\"" : path);
      only_keys(spec, path, {"nodes", "gpus_per_node", "cpus_per_node", "memory_gb_per_node"});
      auto required = [&, &spec = spec](const char* key) -> const ordered_json& {
        return JsonReader::required(spec, path, key);
      };
      int nodes = count(required("nodes"), child(path, "nodes"), kMaxNodesPerType);
      int gpus = count(required("gpus_per_node"), child(path, "gpus_per_node"), kMaxGpusPerNode);
      double cpus = 0.0, memory_gb = 0.0;
      if (auto it = spec.find("cpus_per_node"); it != spec.end())
        cpus = non_negative(*it, child(path, "cpus_per_node"));
      if (auto it = spec.find("memory_gb_per_node"); it != spec.end())
        memory_gb = non_negative(*it, child(path, "memory_gb_per_node"));
      std::size_t type = type_of(gpu_type);
      for (int i = 0; i < nodes; ++i) add_node(path, "", type, gpus, cpus, memory_gb);
    }
  }

  Cluster cluster_;
  std::vector<int> per_type_;  // nodes seen so far per type, for default names
  std::set<std::string> names_;
  std::int64_t total_gpus_ = 0;
  bool node_list_ = false;
};

}  // namespace

Cluster parse_cluster_json(std::string_view json_text, const std::string& source) {
  return ClusterParser(source).parse(text_input::parse_json(json_text, source));
}

Cluster read_cluster_file(const std::string& path) {
  return parse_cluster_json(text_input::read_text_file(path), path);
}


namespace {

// A whole number in [min, max] written in decimal digits only.
std::int64_t spec_count(std::string_view text, std::int64_t min, std::int64_t max,
                        const std::string& source, const std::string& field, const char* what) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != text.npos)
    throw InputError(source, field,
                     fmt::format("{} '{}' is not a whole number", what, std::string(text)));
  const std::int64_t v = std::stoll(std::string(text));
  if (v < min || v > max)
    throw InputError(source, field, fmt::format("{} must be in [{}, {}], got {}", what, min, max, v));
  return v;
}

}  // namespace

Cluster parse_cluster_spec(std::string_view spec, const std::string& source) {
  constexpr const char* kForm =
      "expected TYPE:GPUS[:GPUS_PER_NODE], comma-separated, e.g. k80:36,p100:36,v100:36:4";
  constexpr std::int64_t kDefaultGpusPerNode = 8;
  Cluster cluster;
  std::int64_t total = 0;
  std::size_t index = 0;
  for (std::size_t at = 0; at <= spec.size(); ++index) {
    std::size_t comma = spec.find(',', at);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view entry = spec.substr(at, comma - at);
    at = comma + 1;
    const std::string field = fmt::format("entry {}", index + 1);
    std::vector<std::string_view> parts;
    for (std::size_t p = 0;;) {
      const std::size_t colon = entry.find(':', p);
      parts.push_back(entry.substr(p, colon == entry.npos ? entry.npos : colon - p));
      if (colon == entry.npos) break;
      p = colon + 1;
    }
    if (entry.empty() || parts.size() < 2 || parts.size() > 3)
      throw InputError(source, field, fmt::format("'{}': {}", std::string(entry), kForm));
    const std::string type(parts[0]);
    // Gavel's own --cluster_spec is counts only (#v100:#p100:#k80): name the
    // types here instead.
    if (type.empty() || type.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                                               "WXYZ0123456789_.-") != std::string::npos ||
        type.find_first_not_of("0123456789") == std::string::npos)
      throw InputError(source, field,
                       fmt::format("'{}' is not a GPU type name (letters, digits, '_', '.', '-'); "
                                   "{}",
                                   type, kForm));
    if (cluster.type_index(type))
      throw InputError(source, type, "the GPU type is given twice");
    const std::int64_t gpus = spec_count(parts[1], 1, kMaxGpusPerNode * kMaxNodesPerType, source,
                                         type, "GPUS");
    // Without GPUS_PER_NODE: whole servers of 8 GPUs (the last one holding the
    // rest when GPUS is not a multiple of 8), as real clusters are built, so
    // gangs of up to 8 fit on one node. Gavel's own --num_gpus_per_server
    // defaults to 1 (every GPU its own server, every gang spread): write
    // TYPE:GPUS:1 for that.
    const bool given = parts.size() == 3;
    const std::int64_t per_node =
        given ? spec_count(parts[2], 1, kMaxGpusPerNode, source, type, "GPUS_PER_NODE")
              : std::min<std::int64_t>(kDefaultGpusPerNode, gpus);
    if (given && gpus % per_node != 0)
      throw InputError(source, type,
                       fmt::format("{} GPUs do not fill whole nodes of {}", gpus, per_node));
    const std::int64_t nodes = (gpus + per_node - 1) / per_node;
    if (nodes > kMaxNodesPerType)
      throw InputError(source, type, fmt::format("{} nodes, at most {}", nodes, kMaxNodesPerType));
    total += gpus;
    if (total > INT32_MAX) throw InputError(source, type, "more GPUs than fairgpu can count");
    cluster.gpu_types.push_back(type);
    for (std::int64_t i = 0; i < nodes; ++i)
      cluster.nodes.push_back(Node{fmt::format("{}-{}", type, i), cluster.gpu_types.size() - 1,
                                   static_cast<int>(std::min(per_node, gpus - i * per_node)), 0.0,
                                   0.0});
  }
  return cluster;
}

}  // namespace fairgpu
