#include "supervisor/report/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace framemill {
namespace {

constexpr double kMib = 1024.0 * 1024.0;
constexpr size_t kMaxPointsPerLine = 1500;  // a long job's lines are thinned to this
constexpr size_t kMaxEventRows = 200;
// The plot geometry, in SVG user units (= CSS px).
constexpr double kW = 900, kH = 260, kLeft = 70, kRight = 20, kTop = 15, kBottom = 45;

std::string Num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, std::isfinite(v) ? v : 0.0);
  return buf;
}

// An axis from 0 to at least `v` in at most kTicks + 1 round steps (1, 2, 2.5 or 5 times a
// power of ten): its top and its step.
constexpr int kTicks = 5;
std::pair<double, double> NiceAxis(double v) {
  if (!(v > 0) || !std::isfinite(v)) return {1.0, 0.2};
  double p = std::pow(10.0, std::floor(std::log10(v / kTicks)));
  for (;; p *= 10) {
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
      const double step = m * p;
      const double top = std::ceil(v / step - 1e-9) * step;
      if (top / step <= kTicks + 1) return {top, step};
    }
  }
}

enum class Marker { kRecycle, kCrash, kKill };

const char* MarkerName(Marker m) {
  switch (m) {
    case Marker::kRecycle:
      return "recycle";
    case Marker::kCrash:
      return "crash";
    case Marker::kKill:
      return "kill";
  }
  return "?";
}

struct Series {
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
  std::string y_label;
  std::string x_label = "seconds since the job started";
  double x_max = 1;
  std::vector<Series> series;
  std::vector<EventMark> marks;
  std::string empty_note;  // drawn in the middle when no series has a point
};

std::string MarkerSvg(const EventMark& m, double px, double py) {
  std::string title = "<title>" + HtmlText(m.title) + "</title>";
  std::string cls = std::string("ev-") + MarkerName(m.kind);
  switch (m.kind) {
    case Marker::kRecycle:
      return "<path class=\"" + cls + "\" d=\"M" + Num(px) + "," + Num(py - 8) +
             " l7,12 h-14 z\" " + "fill=\"" + kRecycleColor +
             "\" stroke=\"#ffffff\" stroke-width=\"1\">" + title + "</path>";
    case Marker::kCrash:
      return "<path class=\"" + cls + "\" d=\"M" + Num(px - 6) + "," + Num(py - 6) +
             " l12,12 m0,-12 " + "l-12,12\" stroke=\"" + kCrashColor +
             "\" stroke-width=\"3.5\" fill=\"none\">" + title + "</path>";
    case Marker::kKill:
      return "<rect class=\"" + cls + "\" x=\"" + Num(px - 6) + "\" y=\"" + Num(py - 6) +
             "\" width=\"12\" height=\"12\" fill=\"" + kKillColor + "\">" + title + "</rect>";
  }
  return "";
}

// Every k-th point, the last one kept, so a line has at most kMaxPointsPerLine points.
std::vector<std::pair<double, double>> Thin(const std::vector<std::pair<double, double>>& in) {
  if (in.size() <= kMaxPointsPerLine) return in;
  size_t step = (in.size() + kMaxPointsPerLine - 1) / kMaxPointsPerLine;
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < in.size(); i += step) out.push_back(in[i]);
  if (out.back() != in.back()) out.push_back(in.back());
  return out;
}

std::string RenderPlot(const Plot& p) {
  double y_max = 0;
  bool any = false;
  for (const Series& s : p.series) {
    for (const auto& pt : s.points) {
      y_max = std::max(y_max, pt.second);
      any = true;
    }
  }
  for (const EventMark& m : p.marks) y_max = std::max(y_max, m.y);
  double y_step = 0, x_step = 0;
  std::tie(y_max, y_step) = NiceAxis(y_max * 1.05);  // room above the highest marker
  double x_max = 0;
  std::tie(x_max, x_step) = NiceAxis(p.x_max);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double x) { return kLeft + pw * std::clamp(x / x_max, 0.0, 1.0); };
  auto Y = [&](double y) { return kTop + ph * (1.0 - std::clamp(y / y_max, 0.0, 1.0)); };

  std::string o = "<svg class=\"plot " + p.id + "\" width=\"" + Num(kW, 0) + "\" height=\"" +
                  Num(kH, 0) + "\" viewBox=\"0 0 " + Num(kW, 0) + " " + Num(kH, 0) +
                  "\" role=\"img\" aria-label=\"" + HtmlText(p.y_label) + "\">";
  o += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(pw) +
       "\" height=\"" + Num(ph) + "\" fill=\"" + p.background + "\"/>";
  const int y_decimals = y_step < 0.1 ? 2 : (y_step < 1 ? 1 : 0);
  const int x_decimals = x_step < 0.1 ? 2 : (x_step < 1 ? 1 : 0);
  for (int i = 0; i * y_step <= y_max * 1.000001; ++i) {
    const double yv = i * y_step;
    o += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kLeft + pw) + "\" y1=\"" + Num(Y(yv)) +
         "\" y2=\"" + Num(Y(yv)) + "\" stroke=\"#cccccc\" stroke-width=\"1\"/>";
    o += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(Y(yv) + 4) +
         "\" text-anchor=\"end\" font-size=\"11\">" + Num(yv, y_decimals) + "</text>";
  }
  for (int i = 0; i * x_step <= x_max * 1.000001; ++i) {
    const double xv = i * x_step;
    o += "<line x1=\"" + Num(X(xv)) + "\" x2=\"" + Num(X(xv)) + "\" y1=\"" + Num(kTop + ph) +
         "\" y2=\"" + Num(kTop + ph + 5) + "\" stroke=\"#333333\"/>";
    o += "<text x=\"" + Num(X(xv)) + "\" y=\"" + Num(kTop + ph + 18) +
         "\" text-anchor=\"middle\" font-size=\"11\">" + Num(xv, x_decimals) + "</text>";
  }
  o += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kLeft) + "\" y1=\"" + Num(kTop) + "\" y2=\"" +
       Num(kTop + ph) + "\" stroke=\"#333333\"/>";
  o += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kLeft + pw) + "\" y1=\"" + Num(kTop + ph) +
       "\" y2=\"" + Num(kTop + ph) + "\" stroke=\"#333333\"/>";
  o += "<text x=\"" + Num(kLeft + pw / 2) + "\" y=\"" + Num(kH - 6) +
       "\" text-anchor=\"middle\" font-size=\"12\">" + HtmlText(p.x_label) + "</text>";
  o += "<text transform=\"translate(14," + Num(kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" + HtmlText(p.y_label) + "</text>";
  for (const Series& s : p.series) {
    if (s.points.empty()) continue;
    o += "<polyline class=\"series\" fill=\"none\" stroke=\"" + s.color +
         "\" stroke-width=\"2\" stroke-linejoin=\"round\"";
    if (!s.dash.empty()) o += " stroke-dasharray=\"" + s.dash + "\"";
    o += " points=\"";
    for (const auto& pt : Thin(s.points)) o += Num(X(pt.first)) + "," + Num(Y(pt.second)) + " ";
    o += "\"><title>" + HtmlText(s.label) + "</title></polyline>";
  }
  for (const EventMark& m : p.marks) o += MarkerSvg(m, X(m.x), Y(m.y));
  if (!any && !p.empty_note.empty()) {
    o += "<text x=\"" + Num(kLeft + pw / 2) + "\" y=\"" + Num(kTop + ph / 2) +
         "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#555555\">" + HtmlText(p.empty_note) +
         "</text>";
  }
  o += "</svg>\n";
  // The legend, as HTML under the plot.
  o += "<div class=\"legend\">";
  for (const Series& s : p.series) {
    if (s.points.empty()) continue;
    o += "<span><svg width=\"28\" height=\"10\"><line x1=\"0\" x2=\"28\" y1=\"5\" y2=\"5\" "
         "stroke=\"" +
         s.color + "\" stroke-width=\"2\"" +
         (s.dash.empty() ? std::string() : " stroke-dasharray=\"" + s.dash + "\"") + "/></svg> " +
         HtmlText(s.label) + "</span>";
  }
  std::set<Marker> kinds;
  for (const EventMark& m : p.marks) kinds.insert(m.kind);
  for (Marker k : kinds) {
    EventMark sample;
    sample.kind = k;
    sample.title = MarkerName(k);
    o += "<span><svg width=\"16\" height=\"16\">" + MarkerSvg(sample, 8, 9) + "</svg> " +
         MarkerName(k) + "</span>";
  }
  o += "</div>\n";
  return o;
}

// The marker of a timeline event, if it has one.
std::optional<Marker> MarkerFor(TimelineEventKind event) {
  if (event == TimelineEventKind::kRecycle) return Marker::kRecycle;
  if (event == TimelineEventKind::kCrash) return Marker::kCrash;
  if (event == TimelineEventKind::kKill) return Marker::kKill;
  return std::nullopt;
}

const char* SlotColor(int worker) {
  constexpr size_t n = sizeof(kWorkerColors) / sizeof(kWorkerColors[0]);
  return kWorkerColors[static_cast<size_t>(std::max(worker, 0)) % n];
}

double XMax(const std::vector<TimelineRecord>& timeline) {
  return timeline.empty() ? 1.0 : std::max(1.0, timeline.back().t_s);
}

// Memory of each worker slot: `figure` of each event, in MiB. GPU plots draw three figures.
struct Figure {
  const char* name;
  const char* dash;
  uint64_t TimelineEvent::*bytes;
};

Plot MemoryPlot(const std::vector<TimelineRecord>& timeline, const std::vector<Figure>& figures,
                const std::string& id, const char* background, const std::string& y_label) {
  Plot p;
  p.id = id;
  p.background = background;
  p.y_label = y_label;
  p.x_max = XMax(timeline);
  std::map<std::pair<int, size_t>, Series> lines;  // (slot, figure)
  for (const TimelineRecord& r : timeline) {
    for (size_t f = 0; f < figures.size(); ++f) {
      Series& s = lines[{r.event.worker, f}];
      s.label = "worker " + std::to_string(r.event.worker) +
                (figures.size() > 1 ? std::string(" ") + figures[f].name : std::string());
      s.color = SlotColor(r.event.worker);
      s.dash = figures[f].dash;
      s.points.emplace_back(r.t_s, static_cast<double>(r.event.*(figures[f].bytes)) / kMib);
    }
    if (std::optional<Marker> kind = MarkerFor(r.event.kind)) {
      p.marks.push_back({r.t_s, static_cast<double>(r.event.*(figures[0].bytes)) / kMib, *kind,
                         std::string(Name(r.event.kind)) + ": worker " +
                             std::to_string(r.event.worker) + " gen " +
                             std::to_string(r.event.generation) + ": " + r.event.reason});
    }
  }
  for (auto& [key, s] : lines) {
    bool nonzero =
        std::any_of(s.points.begin(), s.points.end(), [](const auto& pt) { return pt.second > 0; });
    if (nonzero) p.series.push_back(std::move(s));
  }
  return p;
}

std::string StagesSvg(const StageTimes& st) {
  struct Row {
    std::string name;
    double capacity, busy, waiting;
    std::string waiting_what;
  };
  const double pipe = st.pipeline_s;
  const std::vector<Row> rows = {
      {"decoder", pipe, st.decode_s, st.decode_wait_s, "waiting for a free slot"},
      {"workers (" + std::to_string(std::max(1, st.workers)) + ")", pipe * std::max(1, st.workers),
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

std::string Style() {
  return "body{font-family:'DejaVu Sans',Arial,sans-serif;font-size:14px;margin:16px 24px;"
         "color:#111111;"
         "background:#ffffff;max-width:960px}"
         "h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:22px 0 6px}"
         ".outcome{font-weight:bold}.failed{color:#b00000}"
         "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #bbbbbb;"
         "padding:2px 6px;text-align:left;vertical-align:top}"
         ".legend{font-size:12px;margin:2px 0 4px 70px}.legend span{margin-right:14px;"
         "white-space:nowrap}.legend svg{vertical-align:middle}"
         ".stills{padding:6px;background:" +
         std::string(kStillsColor) +
         "}"
         ".stills figure{margin:4px;display:inline-block}"
         ".stills img{width:400px;height:auto;display:block}"
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

std::vector<std::pair<double, double>> ThroughputSeries(const std::vector<TimelineRecord>& timeline,
                                                        double window_s) {
  std::vector<std::pair<double, double>> out;
  if (timeline.empty() || !(window_s > 0)) return out;
  std::map<std::pair<int, uint64_t>, uint64_t> last;  // (slot, generation) -> frames
  std::vector<double> frames;
  bool any_chunk = false;
  for (const TimelineRecord& r : timeline) {
    if (r.event.kind != TimelineEventKind::kChunk) continue;
    any_chunk = true;
    uint64_t& before = last[{r.event.worker, r.event.generation}];
    const uint64_t done = r.event.frames > before ? r.event.frames - before : 0;
    before = std::max(before, r.event.frames);
    const size_t bin = static_cast<size_t>(std::max(0.0, r.t_s) / window_s);
    if (bin >= frames.size()) frames.resize(bin + 1, 0.0);
    frames[bin] += static_cast<double>(done);
  }
  if (!any_chunk) return out;
  const size_t bins = static_cast<size_t>(std::ceil(XMax(timeline) / window_s));
  frames.resize(std::max(frames.size(), bins), 0.0);
  for (size_t b = 0; b < frames.size(); ++b) {
    out.emplace_back((static_cast<double>(b) + 0.5) * window_s, frames[b] / window_s);
  }
  return out;
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

  o += "<h2>Host memory of each worker slot (resident set)</h2>\n";
  o += RenderPlot(MemoryPlot(d.timeline, {{"rss", "", &TimelineEvent::rss_bytes}}, "rss",
                             kRssPlotColor, "resident set (MiB)"));
  Plot gpu = MemoryPlot(d.timeline,
                        {{"reserved", "", &TimelineEvent::gpu_reserved_bytes},
                         {"allocated", "7,4", &TimelineEvent::gpu_allocated_bytes},
                         {"process (driver)", "2,3", &TimelineEvent::gpu_process_bytes}},
                        "gpu", kGpuPlotColor, "GPU memory (MiB)");
  gpu.empty_note = "no GPU figures: the workers ran on the CPU";
  o += "<h2>GPU memory of each worker slot (reserved solid, allocated dashed, process "
       "dotted)</h2>\n";
  o += RenderPlot(gpu);

  Plot fps;
  fps.id = "throughput";
  fps.background = kThroughputPlotColor;
  fps.y_label = "frames per second";
  fps.x_max = XMax(d.timeline);
  const double window = std::max(0.25, fps.x_max / 40.0);
  fps.series.push_back({"all workers (" + Num(window, 2) + " s windows)", kWorkerColors[0], "",
                        ThroughputSeries(d.timeline, window)});
  fps.empty_note = "no chunk was finished";
  o += "<h2>Throughput</h2>\n" + RenderPlot(fps);

  o += "<h2>Where the time went</h2>\n" + StagesSvg(d.stages);
  const StageTimes& st = d.stages;
  o += "<p>prepare " + Num(st.prepare_s, 2) + " s, start workers " + Num(st.start_s, 2) +
       " s, pipeline " + Num(st.pipeline_s, 2) + " s (of it " + Num(st.tail_s, 2) +
       " s after the workers' last chunk, the encoders finishing), mux and verify " +
       Num(st.mux_s, 2) + " s</p>\n";

  o += "<h2>Worker events</h2>\n" + EventTable(d.timeline);

  o += "<h2>Before and after</h2>\n";
  if (d.stills.empty()) {
    o += "<p class=\"stills-note\">stills: " + HtmlText(d.stills_note) + "</p>\n";
  } else {
    o += "<div class=\"stills\">\n";
    for (const ReportStill& s : d.stills) {
      const std::string f = std::to_string(s.frame);
      o += "<div><figure><img alt=\"frame " + f + " before\" src=\"" + HtmlText(s.input_uri) +
           "\"><figcaption>frame " + f +
           ", as the workers got it</figcaption></figure>"
           "<figure><img alt=\"frame " +
           f + " after\" src=\"" + HtmlText(s.output_uri) + "\"><figcaption>frame " + f +
           ", as the model gave it back</figcaption></figure></div>\n";
    }
    o += "</div>\n";
  }
  o += "</body></html>\n";
  return o;
}

}  // namespace framemill
