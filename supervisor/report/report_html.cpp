#include "supervisor/report/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "supervisor/report/report_plots.h"

namespace framemill {
namespace {

constexpr size_t kMaxEventRows = 200;
constexpr double kW = 900;  // the stages' plot width, as the other plots' (report_plots.cpp)

std::string Num(double v, int decimals = 1) { return PlotNum(v, decimals); }

// `workers`: the worker slots that started (the job may have asked for more than it got).
std::string StagesSvg(const StageTimes& st, int workers) {
  struct Row {
    std::string name;
    double capacity, busy, waiting;
    std::string waiting_what;
  };
  const double pipe = st.pipeline_s;
  const std::vector<Row> rows = {
      {"decoder", pipe, st.decode_s, st.decode_wait_s, "waiting for a free slot"},
      {"workers (" + std::to_string(std::max(1, workers)) + ")", pipe * std::max(1, workers),
       st.workers_busy_s, 0, ""},
      {"encoders (" + std::to_string(std::max(1, st.encoders)) + ")",
       pipe * std::max(1, st.encoders), st.encode_s, st.encode_wait_s, "waiting for output"}};
  const double bar_x = 150, bar_w = 480, row_h = 34, top = 12;
  const double h = top + row_h * rows.size() + 30;
  std::string o = "<svg class=\"plot stages\" width=\"" + Num(kW, 0) + "\" height=\"" + Num(h, 0) +
                  "\" viewBox=\"0 0 " + Num(kW, 0) + " " + Num(h, 0) +
                  "\" role=\"img\" aria-label=\"stages\">";
  o += "<rect x=\"" + Num(bar_x) + "\" y=\"" + Num(top - 4) + "\" width=\"" + Num(bar_w) +
       "\" height=\"" + Num(row_h * rows.size() + 4) + "\" fill=\"" + kStagesPlotColor + "\"/>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double y = top + row_h * i;
    const double cap = r.capacity > 0 ? r.capacity : 1;
    const double busy = std::clamp(r.busy / cap, 0.0, 1.0);
    const double wait = std::clamp(r.waiting / cap, 0.0, 1.0 - busy);
    o += "<text x=\"" + Num(bar_x - 8) + "\" y=\"" + Num(y + 17) +
         "\" text-anchor=\"end\" font-size=\"12\">" + HtmlText(r.name) + "</text>";
    o += "<rect class=\"busy\" x=\"" + Num(bar_x) + "\" y=\"" + Num(y) + "\" width=\"" +
         Num(bar_w * busy) + "\" height=\"24\" fill=\"#4c9a2a\"><title>busy " + Num(r.busy, 2) +
         " s</title></rect>";
    o += "<rect class=\"waiting\" x=\"" + Num(bar_x + bar_w * busy) + "\" y=\"" + Num(y) +
         "\" width=\"" + Num(bar_w * wait) + "\" height=\"24\" fill=\"#e8a33d\"><title>" +
         HtmlText(r.waiting_what) + " " + Num(r.waiting, 2) + " s</title></rect>";
    o += "<text x=\"" + Num(bar_x + bar_w + 8) + "\" y=\"" + Num(y + 17) + "\" font-size=\"12\">" +
         Num(100 * busy, 0) + "% busy (" + Num(r.busy, 2) + " s)" +
         (r.waiting_what.empty() ? "" : ", " + Num(100 * wait, 0) + "% waiting") + "</text>";
  }
  o += "<text x=\"" + Num(bar_x) + "\" y=\"" + Num(h - 8) + "\" font-size=\"11\">share of " +
       Num(pipe, 2) + " s of pipeline time per decoder, worker or encoder</text>";
  o += "</svg>\n<div class=\"legend\"><span><svg width=\"14\" height=\"10\"><rect width=\"14\" "
       "height=\"10\" fill=\"#4c9a2a\"/></svg> busy</span><span><svg width=\"14\" height=\"10\">"
       "<rect width=\"14\" height=\"10\" fill=\"#e8a33d\"/></svg> waiting</span><span>rest: "
       "idle or not measured</span></div>\n";
  return o;
}

std::string MemoryPlots(const std::vector<TimelineRecord>& timeline) {
  std::string o = "<h2>Host memory of each worker slot (resident set)</h2>\n";
  o += RenderPlot(MemoryPlot(timeline, {{"rss", "", &TimelineEvent::rss_bytes}}, "rss",
                             kRssPlotColor, "resident set (MiB)"));
  const Plot gpu = MemoryPlot(timeline,
                              {{"reserved", "", &TimelineEvent::gpu_reserved_bytes},
                               {"allocated", "7,4", &TimelineEvent::gpu_allocated_bytes},
                               {"process (driver)", "2,3", &TimelineEvent::gpu_process_bytes}},
                              "gpu", kGpuPlotColor, "GPU memory (MiB)");
  o += "<h2>GPU memory of each worker slot</h2>\n";
  if (gpu.series.empty()) {  // a CPU job: no panel of zeros
    return o + "<p class=\"no-gpu\">no GPU figures: the workers ran on the CPU.</p>\n";
  }
  return o + "<p>reserved solid, allocated dashed, process (the driver's figure) dotted</p>\n" +
         RenderPlot(gpu);
}

std::string ThroughputPlot(const std::vector<TimelineRecord>& timeline) {
  Plot fps;
  fps.id = "throughput";
  fps.background = kThroughputPlotColor;
  fps.y_label = "frames per second";
  fps.x_max = TimelineEnd(timeline);
  const double window = ThroughputWindow(timeline);
  fps.series.push_back({"all workers (" + Num(window, window < 10 ? 2 : 0) + " s windows)",
                        kWorkerColors[0], "", ThroughputSeries(timeline, window)});
  fps.empty_note = "no chunk was finished";
  return RenderPlot(fps);
}

std::string EventTable(const std::vector<TimelineRecord>& timeline) {
  std::string rows;
  size_t n = 0, more = 0;
  for (const TimelineRecord& r : timeline) {
    const TimelineEventKind kind = r.event.kind;
    if (kind == TimelineEventKind::kChunk || kind == TimelineEventKind::kReady ||
        kind == TimelineEventKind::kStart) {
      continue;
    }
    if (n++ >= kMaxEventRows) {
      ++more;
      continue;
    }
    rows += "<tr><td>" + Num(r.t_s, 2) + "</td><td>" + std::to_string(r.event.worker) +
            "</td><td>" + std::to_string(r.event.generation) + "</td><td>" +
            HtmlText(Name(r.event.kind)) + "</td><td>" + HtmlText(r.event.reason) + "</td></tr>\n";
  }
  if (rows.empty()) return "<p>No worker was recycled, stopped, killed or crashed.</p>\n";
  std::string o =
      "<table class=\"events\"><tr><th>s</th><th>worker</th><th>gen</th><th>event</th>"
      "<th>reason</th></tr>\n" +
      rows + "</table>\n";
  if (more > 0) o += "<p>" + std::to_string(more) + " more events in the timeline file.</p>\n";
  return o;
}

// One before/after pair. Whole frames are scaled alike; crops (a model that changes the frame
// size) are shown 1:1, at their own size.
std::string StillRow(const ReportStill& s) {
  const std::string f = std::to_string(s.frame);
  const bool crop = !s.crop_note.empty();
  const std::string cls = crop ? " class=\"crop\"" : "";
  return "<div><figure><img" + cls + " alt=\"frame " + f + " before\" src=\"" +
         HtmlText(s.input_uri) + "\"><figcaption>frame " + f +
         (crop ? ", the source scaled to the output's size (bicubic)" : ", as the workers got it") +
         "</figcaption></figure><figure><img" + cls + " alt=\"frame " + f + " after\" src=\"" +
         HtmlText(s.output_uri) + "\"><figcaption>frame " + f +
         ", as the model gave it back</figcaption></figure>" +
         (crop ? "<p class=\"crop-note\">" + HtmlText(s.crop_note) + "</p>" : "") + "</div>\n";
}

std::string Style() {
  return "body{font-family:'DejaVu Sans',Arial,sans-serif;font-size:14px;margin:16px 24px;"
         "color:#111111;"
         "background:#ffffff;max-width:960px}"
         "h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:22px 0 6px}"
         ".outcome{font-weight:bold}.failed{color:#b00000}"
         "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #bbbbbb;"
         "padding:2px 6px;text-align:left;vertical-align:top}"
         ".legend{font-size:12px;margin:2px 0 4px 70px}.axis-note,.few-samples{font-size:12px;"
         "margin:0 0 4px 70px;color:#444444}.legend span{margin-right:14px;"
         "white-space:nowrap}.legend svg{vertical-align:middle}"
         ".stills{padding:6px;background:" +
         std::string(kStillsColor) +
         "}"
         ".stills figure{margin:4px;display:inline-block}"
         ".stills img{width:400px;height:auto;display:block}.stills img.crop{width:auto}"
         ".crop-note{font-size:12px;margin:0 4px 8px}"
         ".stills figcaption{font-size:12px}"
         "svg.plot{display:block;max-width:100%;height:auto}"
         "@media print{h2{break-after:avoid}svg.plot,.stills figure{break-inside:avoid}}";
}

}  // namespace

std::string HtmlText(const std::string& text) {
  std::string o;
  o.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '&':
          o += "&amp;";
          break;
        case '<':
          o += "&lt;";
          break;
        case '>':
          o += "&gt;";
          break;
        case '"':
          o += "&quot;";
          break;
        case '\'':
          o += "&#39;";
          break;
        default:
          if (c < 0x20 && c != '\t' && c != '\n')
            o += "\xEF\xBF\xBD";
          else if (c == 0x7f)
            o += "\xEF\xBF\xBD";
          else
            o += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed sequence (no overlongs, no surrogates, at most U+10FFFF) is kept.
    size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 3) {
      ok = !(c == 0xE0 && s[i + 1] < 0xA0) && !(c == 0xED && s[i + 1] >= 0xA0);
    }
    if (ok && len == 4) ok = !(c == 0xF0 && s[i + 1] < 0x90) && !(c == 0xF4 && s[i + 1] >= 0x90);
    if (!ok) {
      o += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    o.append(text, i, len);
    i += len;
  }
  return o;
}

std::string RenderReportHtml(const ReportData& d) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
      "style-src 'unsafe-inline'\"><title>framemill report: " +
      HtmlText(d.title) + "</title><style>" + Style() + "</style></head><body>\n";
  o += "<h1>framemill report: " + HtmlText(d.title) + "</h1>\n";
  o += "<p class=\"outcome" + std::string(d.failed ? " failed" : "") + "\">" + HtmlText(d.outcome) +
       "</p>\n<table class=\"facts\">\n";
  for (const auto& [label, value] : d.facts) {
    o += "<tr><th>" + HtmlText(label) + "</th><td>" + HtmlText(value) + "</td></tr>\n";
  }
  o += "</table>\n";

  o += MemoryPlots(d.timeline);
  o += "<h2>Throughput</h2>\n" + ThroughputPlot(d.timeline);
  // The workers that started: the slots the timeline saw, but no more than the job wanted (a
  // recycled worker's standby takes a slot above them, one at a time); without a timeline, the
  // workers the job wanted.
  const int started = SlotsStarted(d.timeline);
  const int slots = d.timeline.empty()     ? d.stages.workers
                    : d.stages.workers > 0 ? std::min(d.stages.workers, started)
                                           : started;
  o += "<h2>Where the time went</h2>\n" + StagesSvg(d.stages, slots);
  const StageTimes& st = d.stages;
  o += "<p>prepare " + Num(st.prepare_s, 2) + " s, start workers " + Num(st.start_s, 2) +
       " s, pipeline " + Num(st.pipeline_s, 2) + " s (of it " + Num(st.tail_s, 2) +
       " s after the workers' last chunk, the encoders finishing), mux and verify " +
       Num(st.mux_s, 2) + " s, the workers' exit " + Num(st.stop_s, 2) + " s</p>\n";

  o += "<h2>Worker events</h2>\n" + EventTable(d.timeline);

  o += "<h2>Before and after</h2>\n";
  if (d.stills.empty()) {
    o += "<p class=\"stills-note\">stills: " + HtmlText(d.stills_note) + "</p>\n";
  } else {
    o += "<div class=\"stills\">\n";
    for (const ReportStill& s : d.stills) o += StillRow(s);
    o += "</div>\n";
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace framemill
