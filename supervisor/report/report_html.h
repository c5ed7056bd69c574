// The job report: one self-contained HTML page (inline CSS and SVG, no script, no external URL,
// images as data: URIs) that a person opens in a browser or prints. It shows each worker slot's
// host and GPU memory over the job with its recycle, crash and kill events marked (memory axes
// span the data's own range, said under the plot; a CPU job has no GPU panel), the throughput
// over windows wide enough to be steady, where the stages' time went, and before/after stills.
//
// RenderReportHtml is a pure function of plain data: no I/O, no clock; thread-safe. Every text
// it is given (paths, worker reasons, errors) may hold any bytes: it comes out HTML-escaped, with
// bytes that are not UTF-8 replaced by U+FFFD.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/report/job_result.h"
#include "supervisor/report/report_plots.h"  // ThroughputSeries and the plots' other parts
#include "supervisor/workers/timeline.h"

namespace framemill {

// One before/after pair: the same frame as the workers got it and as the model gave it back.
struct ReportStill {
  int64_t frame = 0;       // index in the source
  std::string input_uri;   // data:image/...;base64,...
  std::string output_uri;  // likewise
  // A model that changes the frame size: the stills are 1:1 crops at the output's size, and this
  // says which (shown under them); "" = whole frames, scaled alike.
  std::string crop_note;
};

struct ReportData {
  std::string title;                                       // e.g. the output's name
  std::string outcome;                                     // "done", or why the job failed
  bool failed = false;                                     // outcome is a failure
  std::vector<std::pair<std::string, std::string>> facts;  // label, value lines at the top
  std::vector<TimelineRecord> timeline;                    // in time order
  StageTimes stages;
  std::vector<ReportStill> stills;
  std::string stills_note;  // shown in place of the stills when there are none ("this build has
                            // no OpenCV", "no chunk reached the encoder")
};

// The background colours of the plot areas. They are part of the contract: a test finds each
// plot in a screenshot by its colour (every other fill on the page differs from these).
inline constexpr const char* kRssPlotColor = "#f2f6fc";
inline constexpr const char* kGpuPlotColor = "#f2fcf4";
inline constexpr const char* kThroughputPlotColor = "#fcf8f0";
inline constexpr const char* kStagesPlotColor = "#f8f2fc";
inline constexpr const char* kStillsColor = "#eeeeee";  // behind the stills
// Line colour of worker slot k is kWorkerColors[k % size]; event marker colours.
inline constexpr const char* kWorkerColors[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b",
                                                "#17becf", "#7f7f7f", "#bcbd22", "#e377c2"};
inline constexpr const char* kRecycleColor = "#ff7f0e";
inline constexpr const char* kCrashColor = "#d62728";
inline constexpr const char* kKillColor = "#000000";

// The page. Never fails; data it lacks shows as a sentence ("no GPU figures").
std::string RenderReportHtml(const ReportData& data);

// `text` made safe for HTML text and attribute values: & < > " ' escaped, bytes that are not
// UTF-8 (and control characters other than tab and newline) replaced by U+FFFD.
std::string HtmlText(const std::string& text);

}  // namespace framemill
