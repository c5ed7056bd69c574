#include "supervisor/report/report_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "supervisor/report/report_html.h"

namespace framemill {
namespace {

constexpr double kMib = 1024.0 * 1024.0;
constexpr size_t kMaxPointsPerLine = 1500;  // a long job's lines are thinned to this
// The plot geometry, in SVG user units (= CSS px).
constexpr double kW = 900, kH = 260, kLeft = 70, kRight = 20, kTop = 15, kBottom = 45;

// An axis over at least [lo, hi] in at most kTicks + 1 round steps (1, 2, 2.5 or 5 times a
// power of ten), its ends on a step.
constexpr int kTicks = 5;
struct Axis {
  double lo = 0, hi = 1, step = 0.2;
};
Axis NiceAxis(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return {};
  if (!(hi > lo)) hi = lo + std::max(std::abs(lo) * 0.1, 1.0);
  double p = std::pow(10.0, std::floor(std::log10((hi - lo) / kTicks)));
  for (;; p *= 10) {
    for (double m : {1.0, 2.0, 2.5, 5.0}) {
      const double step = m * p;
      const double bottom = std::floor(lo / step + 1e-9) * step;
      const double top = std::ceil(hi / step - 1e-9) * step;
      if ((top - bottom) / step <= kTicks + 1 + 1e-9) return {bottom, top, step};
    }
  }
}

int Decimals(double step) { return step < 0.1 ? 2 : (step < 1 ? 1 : 0); }

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

std::string MarkerSvg(const EventMark& m, double px, double py) {
  std::string title = "<title>" + HtmlText(m.title) + "</title>";
  std::string cls = std::string("ev-") + MarkerName(m.kind);
  switch (m.kind) {
    case Marker::kRecycle:
      return "<path class=\"" + cls + "\" d=\"M" + PlotNum(px) + "," + PlotNum(py - 8) +
             " l7,12 h-14 z\" " + "fill=\"" + kRecycleColor +
             "\" stroke=\"#ffffff\" stroke-width=\"1\">" + title + "</path>";
    case Marker::kCrash:
      return "<path class=\"" + cls + "\" d=\"M" + PlotNum(px - 6) + "," + PlotNum(py - 6) +
             " l12,12 m0,-12 " + "l-12,12\" stroke=\"" + kCrashColor +
             "\" stroke-width=\"3.5\" fill=\"none\">" + title + "</path>";
    case Marker::kKill:
      return "<rect class=\"" + cls + "\" x=\"" + PlotNum(px - 6) + "\" y=\"" + PlotNum(py - 6) +
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

// The y axis of `p`: from 0, or around the data (points and markers that measured something)
// with 5% of its span to spare on each side.
Axis YAxis(const Plot& p) {
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const PlotSeries& s : p.series) {
    for (const auto& pt : s.points) lo = std::min(lo, pt.second), hi = std::max(hi, pt.second);
  }
  for (const EventMark& m : p.marks) {
    if (m.y > 0) lo = std::min(lo, m.y), hi = std::max(hi, m.y);
  }
  if (hi < lo) return NiceAxis(0, 1);
  if (p.y_from_zero) return NiceAxis(0, std::max(hi, 0.0) * 1.05);  // room above the markers
  const double margin = hi > lo ? 0.05 * (hi - lo) : std::max(0.05 * std::abs(hi), 1.0);
  return NiceAxis(std::max(0.0, lo - margin), hi + margin);
}

std::string Frame(const Plot& p, const Axis& y, const Axis& x) {
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double v) { return kLeft + pw * std::clamp(v / x.hi, 0.0, 1.0); };
  auto Y = [&](double v) {
    return kTop + ph * (1.0 - std::clamp((v - y.lo) / (y.hi - y.lo), 0.0, 1.0));
  };
  std::string o = "<rect x=\"" + PlotNum(kLeft) + "\" y=\"" + PlotNum(kTop) + "\" width=\"" +
                  PlotNum(pw) + "\" height=\"" + PlotNum(ph) + "\" fill=\"" + p.background + "\"/>";
  for (int i = 0; y.lo + i * y.step <= y.hi + y.step * 1e-6; ++i) {
    const double yv = y.lo + i * y.step;
    o += "<line x1=\"" + PlotNum(kLeft) + "\" x2=\"" + PlotNum(kLeft + pw) + "\" y1=\"" +
         PlotNum(Y(yv)) + "\" y2=\"" + PlotNum(Y(yv)) +
         "\" stroke=\"#cccccc\" stroke-width=\"1\"/>";
    o += "<text class=\"y-tick\" x=\"" + PlotNum(kLeft - 6) + "\" y=\"" + PlotNum(Y(yv) + 4) +
         "\" text-anchor=\"end\" font-size=\"11\">" + PlotNum(yv, Decimals(y.step)) + "</text>";
  }
  for (int i = 0; i * x.step <= x.hi * 1.000001; ++i) {
    const double xv = i * x.step;
    o += "<line x1=\"" + PlotNum(X(xv)) + "\" x2=\"" + PlotNum(X(xv)) + "\" y1=\"" +
         PlotNum(kTop + ph) + "\" y2=\"" + PlotNum(kTop + ph + 5) + "\" stroke=\"#333333\"/>";
    o += "<text x=\"" + PlotNum(X(xv)) + "\" y=\"" + PlotNum(kTop + ph + 18) +
         "\" text-anchor=\"middle\" font-size=\"11\">" + PlotNum(xv, Decimals(x.step)) + "</text>";
  }
  o += "<line x1=\"" + PlotNum(kLeft) + "\" x2=\"" + PlotNum(kLeft) + "\" y1=\"" + PlotNum(kTop) +
       "\" y2=\"" + PlotNum(kTop + ph) + "\" stroke=\"#333333\"/>";
  o += "<line x1=\"" + PlotNum(kLeft) + "\" x2=\"" + PlotNum(kLeft + pw) + "\" y1=\"" +
       PlotNum(kTop + ph) + "\" y2=\"" + PlotNum(kTop + ph) + "\" stroke=\"#333333\"/>";
  o += "<text x=\"" + PlotNum(kLeft + pw / 2) + "\" y=\"" + PlotNum(kH - 6) +
       "\" text-anchor=\"middle\" font-size=\"12\">" + HtmlText(p.x_label) + "</text>";
  o += "<text transform=\"translate(14," + PlotNum(kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" + HtmlText(p.y_label) + "</text>";
  return o;
}

std::string Legend(const Plot& p, const Axis& y, const std::string& few) {
  std::string o = "<div class=\"legend\">";
  for (const PlotSeries& s : p.series) {
    if (s.points.empty()) continue;
    const std::string sample =
        s.points.size() < kMinLinePoints
            ? "<circle cx=\"14\" cy=\"5\" r=\"3.5\" fill=\"" + s.color + "\"/>"
            : "<line x1=\"0\" x2=\"28\" y1=\"5\" y2=\"5\" stroke=\"" + s.color +
                  "\" stroke-width=\"2\"" +
                  (s.dash.empty() ? std::string() : " stroke-dasharray=\"" + s.dash + "\"") + "/>";
    o += "<span><svg width=\"28\" height=\"10\">" + sample + "</svg> " + HtmlText(s.label) +
         "</span>";
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
  if (!p.y_from_zero && !p.series.empty()) {
    o += "<p class=\"axis-note\">The y axis runs from " + PlotNum(y.lo, Decimals(y.step)) + " to " +
         PlotNum(y.hi, Decimals(y.step)) +
         (y.lo > 0 ? ", not from 0: the data's own range, with a margin.</p>\n" : ".</p>\n");
  }
  if (!few.empty()) o += "<p class=\"few-samples\">" + HtmlText(few) + "</p>\n";
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

}  // namespace

std::string PlotNum(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, std::isfinite(v) ? v : 0.0);
  return buf;
}

std::string RenderPlot(const Plot& p) {
  bool any = false;
  for (const PlotSeries& s : p.series) any = any || !s.points.empty();
  const Axis y = YAxis(p);
  const Axis x = NiceAxis(0, p.x_max);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double v) { return kLeft + pw * std::clamp(v / x.hi, 0.0, 1.0); };
  auto Y = [&](double v) {
    return kTop + ph * (1.0 - std::clamp((v - y.lo) / (y.hi - y.lo), 0.0, 1.0));
  };

  std::string o = "<svg class=\"plot " + p.id + "\" width=\"" + PlotNum(kW, 0) + "\" height=\"" +
                  PlotNum(kH, 0) + "\" viewBox=\"0 0 " + PlotNum(kW, 0) + " " + PlotNum(kH, 0) +
                  "\" role=\"img\" aria-label=\"" + HtmlText(p.y_label) + "\">";
  o += Frame(p, y, x);
  std::string few;  // the series drawn as points
  for (const PlotSeries& s : p.series) {
    if (s.points.empty()) continue;
    if (s.points.size() < kMinLinePoints) {
      for (const auto& pt : s.points) {
        o += "<circle class=\"sample\" cx=\"" + PlotNum(X(pt.first)) + "\" cy=\"" +
             PlotNum(Y(pt.second)) + "\" r=\"3.5\" fill=\"" + s.color + "\"><title>" +
             HtmlText(s.label) + "</title></circle>";
      }
      few += (few.empty() ? "" : ", ") + s.label + ": " + std::to_string(s.points.size()) +
             (s.points.size() == 1 ? " sample" : " samples");
      continue;
    }
    o += "<polyline class=\"series\" fill=\"none\" stroke=\"" + s.color +
         "\" stroke-width=\"2\" stroke-linejoin=\"round\"";
    if (!s.dash.empty()) o += " stroke-dasharray=\"" + s.dash + "\"";
    o += " points=\"";
    for (const auto& pt : Thin(s.points))
      o += PlotNum(X(pt.first)) + "," + PlotNum(Y(pt.second)) + " ";
    o += "\"><title>" + HtmlText(s.label) + "</title></polyline>";
  }
  for (const EventMark& m : p.marks) o += MarkerSvg(m, X(m.x), Y(m.y));
  if (!any && !p.empty_note.empty()) {
    o += "<text x=\"" + PlotNum(kLeft + pw / 2) + "\" y=\"" + PlotNum(kTop + ph / 2) +
         "\" text-anchor=\"middle\" font-size=\"14\" fill=\"#555555\">" + HtmlText(p.empty_note) +
         "</text>";
  }
  o += "</svg>\n";
  if (!few.empty()) {
    few = "Too few samples for a line (" + few +
          "), drawn as points: the timeline has a sample at each worker event (start, ready, "
          "each chunk, recycle, exit), and this job had too few of them.";
  }
  return o + Legend(p, y, few);
}

Plot MemoryPlot(const std::vector<TimelineRecord>& timeline,
                const std::vector<MemoryFigure>& figures, const std::string& id,
                const char* background, const std::string& y_label) {
  Plot p;
  p.id = id;
  p.background = background;
  p.y_label = y_label;
  p.x_max = TimelineEnd(timeline);
  p.y_from_zero = false;
  std::map<std::pair<int, size_t>, PlotSeries> lines;  // (slot, figure)
  for (const TimelineRecord& r : timeline) {
    for (size_t f = 0; f < figures.size(); ++f) {
      const uint64_t bytes = r.event.*(figures[f].bytes);
      if (bytes == 0) continue;  // not measured (a worker before its first telemetry)
      PlotSeries& s = lines[{r.event.worker, f}];
      s.label = "worker " + std::to_string(r.event.worker) +
                (figures.size() > 1 ? std::string(" ") + figures[f].name : std::string());
      s.color = SlotColor(r.event.worker);
      s.dash = figures[f].dash;
      s.points.emplace_back(r.t_s, static_cast<double>(bytes) / kMib);
    }
    if (std::optional<Marker> kind = MarkerFor(r.event.kind)) {
      p.marks.push_back({r.t_s, static_cast<double>(r.event.*(figures[0].bytes)) / kMib, *kind,
                         std::string(Name(r.event.kind)) + ": worker " +
                             std::to_string(r.event.worker) + " gen " +
                             std::to_string(r.event.generation) + ": " + r.event.reason});
    }
  }
  for (auto& [key, s] : lines) p.series.push_back(std::move(s));
  return p;
}

int SlotsStarted(const std::vector<TimelineRecord>& timeline) {
  std::set<int> slots;
  for (const TimelineRecord& r : timeline) slots.insert(r.event.worker);
  return static_cast<int>(slots.size());
}

double TimelineEnd(const std::vector<TimelineRecord>& timeline) {
  return timeline.empty() ? 1.0 : std::max(1.0, timeline.back().t_s);
}

std::vector<std::pair<double, double>> ThroughputSeries(const std::vector<TimelineRecord>& timeline,
                                                        double window_s) {
  std::vector<std::pair<double, double>> out;
  if (timeline.empty() || !(window_s > 0)) return out;
  const double end = TimelineEnd(timeline);
  const size_t bins = static_cast<size_t>(std::max(1.0, std::round(end / window_s)));
  const double width = end / static_cast<double>(bins);
  auto bin_of = [&](double t) {
    return std::min(bins - 1, static_cast<size_t>(std::max(0.0, t) / width));
  };
  struct Worker {
    uint64_t frames = 0;
    double since = -1;  // when its current chunk began; < 0 = unknown
  };
  std::map<std::pair<int, uint64_t>, Worker> workers;  // (slot, generation)
  std::vector<double> frames(bins, 0.0);
  bool any_chunk = false;
  for (const TimelineRecord& r : timeline) {
    Worker& w = workers[{r.event.worker, r.event.generation}];
    if (r.event.kind == TimelineEventKind::kReady) w.since = r.t_s;
    if (r.event.kind != TimelineEventKind::kChunk) continue;
    any_chunk = true;
    const double done =
        static_cast<double>(r.event.frames > w.frames ? r.event.frames - w.frames : 0);
    w.frames = std::max(w.frames, r.event.frames);
    const double t0 = w.since >= 0 && w.since < r.t_s ? w.since : r.t_s, t1 = r.t_s;
    w.since = r.t_s;
    if (t1 <= t0) {
      frames[bin_of(t1)] += done;
      continue;
    }
    for (size_t b = bin_of(t0); b <= bin_of(t1); ++b) {  // the share of [t0, t1] in each window
      const double lo = std::max(t0, static_cast<double>(b) * width);
      const double hi = b + 1 == bins ? t1 : std::min(t1, static_cast<double>(b + 1) * width);
      if (hi > lo) frames[b] += done * (hi - lo) / (t1 - t0);
    }
  }
  if (!any_chunk) return out;
  for (size_t b = 0; b < bins; ++b) {
    out.emplace_back((static_cast<double>(b) + 0.5) * width, frames[b] / width);
  }
  return out;
}

double ThroughputWindow(const std::vector<TimelineRecord>& timeline) {
  constexpr double kChunksPerWindow = 4, kMaxWindows = 100, kMinWindows = 3;
  std::map<int, std::vector<double>> gaps;          // slot -> times between its chunk events
  std::map<std::pair<int, uint64_t>, double> last;  // (slot, generation) -> last chunk's time
  for (const TimelineRecord& r : timeline) {
    if (r.event.kind != TimelineEventKind::kChunk) continue;
    auto [it, first] = last.try_emplace({r.event.worker, r.event.generation}, r.t_s);
    if (!first) gaps[r.event.worker].push_back(r.t_s - it->second);
    it->second = r.t_s;
  }
  double slowest = 0;
  for (auto& [slot, g] : gaps) {
    std::nth_element(g.begin(), g.begin() + g.size() / 2, g.end());
    slowest = std::max(slowest, g[g.size() / 2]);
  }
  const double end = TimelineEnd(timeline);
  return std::min(end / kMinWindows, std::max(kChunksPerWindow * slowest, end / kMaxWindows));
}

}  // namespace framemill
