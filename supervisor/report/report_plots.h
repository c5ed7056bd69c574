// The job report's plots: plain data (series of points, event markers) drawn as one inline SVG
// each, and the series the report draws from a job's timeline (memory of each worker slot,
// throughput over time). Used by report_html.cpp; pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/workers/timeline.h"

namespace framemill {

enum class Marker { kRecycle, kCrash, kKill };

struct PlotSeries {
  std::string label;
  std::string color;
  std::string dash;  // SVG stroke-dasharray; "" = solid
  std::vector<std::pair<double, double>> points;
};

struct EventMark {
  double x = 0, y = 0;
  Marker kind = Marker::kRecycle;
  std::string title;  // worker, generation, reason
};

struct Plot {
  std::string id;  // CSS class of the <svg>
  std::string background;
  std::string y_label;  // the unit; a y axis that does not start at 0 adds its range
  std::string x_label = "seconds since the job started";
  double x_max = 1;
  // The y axis starts at 0 (a rate), or at the data's own minimum less a margin (memory: an
  // axis from 0 flattens a 1600 -> 1700 MiB drift, and a line from an unmeasured 0 reads as a
  // leak).
  bool y_from_zero = true;
  std::vector<PlotSeries> series;
  std::vector<EventMark> marks;
  std::string empty_note;  // drawn in the middle when no series has a point
};

// A series with fewer points than this is drawn as points, with a note under the plot: two
// samples joined by a line claim a trend nobody measured.
inline constexpr size_t kMinLinePoints = 3;

// The plot as an <svg class="plot ID"> and its legend.
std::string RenderPlot(const Plot& plot);

// One memory figure of a timeline event, for MemoryPlot. GPU plots draw three figures.
struct MemoryFigure {
  const char* name;
  const char* dash;
  uint64_t TimelineEvent::*bytes;
};

// Memory of each worker slot (generations joined), in MiB, from every timeline event that
// measured it: the timeline is sampled at each worker event (start, ready, every chunk, recycle,
// stop, crash, kill: Dispatcher::Record), and an event with a figure of 0 (a worker just
// started, before its first telemetry) measured nothing and is left out. A slot with no
// measured figure has no series; a plot with no series has nothing to draw.
Plot MemoryPlot(const std::vector<TimelineRecord>& timeline,
                const std::vector<MemoryFigure>& figures, const std::string& id,
                const char* background, const std::string& y_label);

// The worker slots that started in `timeline` (distinct slot numbers of its events).
int SlotsStarted(const std::vector<TimelineRecord>& timeline);

// The last event's time, at least 1 s: the x axis' length.
double TimelineEnd(const std::vector<TimelineRecord>& timeline);

// Frames per second over time, from the chunk events' per-worker frame counts. Each chunk's
// frames are spread over the time its worker spent on it (from that worker generation's previous
// chunk or ready event; a chunk with neither counts at its own time), so a worker that finishes
// a chunk every 0.1 s draws as the steady rate it is, not as a 0 <-> peak sawtooth of chunks
// landing in some windows and not others. The job's time (0 to TimelineEnd) is cut into equal
// windows as near `window_s` wide as divide it; each point is a window's middle and its frames
// over its width. Empty when no chunk was recorded. `window_s` > 0.
std::vector<std::pair<double, double>> ThroughputSeries(const std::vector<TimelineRecord>& timeline,
                                                        double window_s);

// The window the report draws throughput over, in seconds: at least 4 chunk intervals of the
// slowest worker slot (the median time between its chunk events), so every worker finishes
// several chunks in each window and whatever one chunk's timing adds (a chunk without a known
// start, a worker that waited for input) is a fraction of the window; and at least 1/100 of the
// job, so a night draws as 100 steady points (a 10-hour job: 6-minute windows). At most 1/3 of
// the job, so that even a short job draws a line of 3 points: there a window may hold fewer than
// 4 chunks, which spreading each chunk over its own time (ThroughputSeries) keeps steady.
double ThroughputWindow(const std::vector<TimelineRecord>& timeline);

// `v` with `decimals` decimals ("0" for a value that is not finite): numbers in SVG and labels.
std::string PlotNum(double v, int decimals = 1);

}  // namespace framemill
