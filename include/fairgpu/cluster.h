// The cluster a scheduler runs (docs/design.md §1): nodes, each with one GPU type, a
// GPU count, CPU cores and memory. Types are ordered slowest first once a
// throughput profile is bound (see bind_cluster in sim/model.h); the reader
// keeps the order of first appearance.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairgpu {

struct Node {
  std::string name;
  std::size_t type = 0;  // index into Cluster::gpu_types
  int gpus = 0;
  double cpus = 0.0;
  double memory_gb = 0.0;
};

struct Cluster {
  std::vector<std::string> gpu_types;
  std::vector<Node> nodes;
  // A gang must run within one node: the backend cannot run one process
  // group over several (fairgpu's Slurm executor keeps a job on one node).
  // Placers then never spread a gang over nodes or types, and a gang bigger
  // than every node of a type does not run on that type.
  bool gangs_on_one_node = false;
  // A gang spread over nodes takes the same number of GPUs on each, all of
  // one type: the backend gives a job one count of GPUs per node (Slurm's
  // --gres). Placers then never mix types for a gang nor spread it
  // unevenly; a gang that no node holds whole waits for such a spread.
  bool gangs_spread_evenly = false;
  // Readers' remarks on what they skipped (read_alibaba_cluster: CPU-only
  // nodes), for the CLI to print on stderr; see Workload::notes.
  std::vector<std::string> notes = {};

  std::size_t num_types() const { return gpu_types.size(); }
  std::optional<std::size_t> type_index(std::string_view name) const;
  std::vector<int> capacity() const;  // GPUs per type
  int total_gpus() const;
};

// Whether nodes of one GPU type with these GPU counts can hold a gang of
// `gang` as Cluster::gangs_spread_evenly allows: whole on one node, or
// gang / k GPUs on each of k nodes for some k dividing gang.
bool holds_gang_evenly(const std::vector<int>& node_gpus, int gang);

// JSON cluster spec, either the node list
//   {"nodes": [{"name": "n0", "gpu_type": "v100", "gpus": 4, "cpus": 32, "memory_gb": 256}, ...]}
// (`name` defaults to "<type>-<i>", `cpus`/`memory_gb` to 0 = unknown), or the
// compact form
//   {"k80": {"nodes": 9, "gpus_per_node": 4, "cpus_per_node": 32, "memory_gb_per_node": 256}, ...}
// Throws InputError naming the file and field on anything malformed (unknown
// keys, non-positive counts, negative CPUs, empty cluster, duplicate names).
Cluster parse_cluster_json(std::string_view json_text, const std::string& source);
Cluster read_cluster_file(const std::string& path);

// Gavel-style shorthand (--cluster-spec): "TYPE:GPUS[:GPUS_PER_NODE],..."
// e.g. "k80:36,p100:36,v100:36:4". GPUS_PER_NODE is Gavel's
// --num_gpus_per_server for that type (GPUS must be a multiple of it; 1 as
// Gavel's default: every GPU its own node). Without it: nodes of 8 GPUs, the
// last one holding the rest (k80:36 is 4 x 8 + 1 x 4). Nodes are named
// "<type>-<i>", without CPU or memory figures. Throws InputError naming
// `source` and the entry or type on anything else (a repeated type, a count
// that is not a whole number >= 1, Gavel's unnamed "36:36:36").
Cluster parse_cluster_spec(std::string_view spec, const std::string& source);

// The built-in cluster of `fairgpu simulate` without --cluster: three GPU types
// (k80, p100, v100), three nodes of eight GPUs each (72 GPUs).
Cluster default_cluster();

}  // namespace fairgpu
