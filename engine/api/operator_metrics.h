// The /metrics families an operator of a cluster watches besides the request figures: which
// build runs (baton_build_info), this process (the standard process_* set), whether each node is
// up (baton_node_up) and each machine's readings (baton_node_cpu_temperature_celsius, memory,
// network bytes, open connections) as its worker last reported them.
#pragma once

#include <string>

#include "engine/api/metrics.h"
#include "engine/cluster/cluster_view.h"

namespace baton::api {

// The release this binary was built from ("unknown" when the build did not say).
std::string build_version();

void write_build_info(MetricsWriter& w);
// Best effort: a /proc that cannot be read leaves the families out.
void write_process_metrics(MetricsWriter& w);
void write_node_metrics(MetricsWriter& w, const ClusterViewSnapshot& snapshot);

}  // namespace baton::api
