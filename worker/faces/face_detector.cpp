#include "worker/faces/face_detector.h"

#include <algorithm>
#include <utility>

#include "worker/faces/blazeface_decode.h"
#include "worker/faces/face_nms.h"

#ifdef FRAMEMILL_HAVE_OPENCV_DNN
#include <opencv2/core.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace framemill {

const char* Name(ChannelOrder order) { return order == ChannelOrder::kBgr ? "bgr" : "rgb"; }

#ifdef FRAMEMILL_HAVE_OPENCV_DNN

namespace {

// BlazeFace's input sizes: the short-range model's, the long-range one's.
constexpr int kInputSizes[] = {128, 256};

std::string ShapeText(const cv::Mat& m) {
  std::string s = "[";
  for (int i = 0; i < m.dims; ++i) s += (i ? "x" : "") + std::to_string(m.size[i]);
  return s + "]";
}

// Rows of a [1, N, C] output (N anchors, C values each); -1 when the shape is another.
int Rows(const cv::Mat& m, int values) {
  if (m.dims != 3 || m.size[0] != 1 || m.size[2] != values || m.type() != CV_32F) return -1;
  return m.size[1];
}

}  // namespace

struct FaceDetector::Impl {
  cv::dnn::Net net;
  std::vector<std::string> outputs;  // names: scores of map 1, of map 2, boxes 1, boxes 2
  int input_size = 0;
  std::vector<Anchor> anchors;
  FaceDetectorOptions options;
  cv::Mat resized, canvas, input;  // reused between calls

  // Runs the net on `blob` ([1, S, S, 3] float); the four outputs in the order of `outputs`.
  Result<std::vector<cv::Mat>> Run(const cv::Mat& blob) {
    std::vector<cv::Mat> out;
    try {
      net.setInput(blob);
      net.forward(out, outputs);
    } catch (const cv::Exception& e) {
      return Status(StatusCode::kModelInvalid, std::string("OpenCV could not run it: ") + e.what());
    }
    return out;
  }
};

namespace {

// Which output is which, told by shape: scores [1, N, 1], boxes [1, N, 16], the first map the
// one with more anchors. `names` (the outputs' names, in the order of `out`) are reordered to:
// scores of the first map, of the second, boxes of the first, of the second.
Status SortOutputs(const std::vector<cv::Mat>& out, std::vector<std::string>* names,
                   int* total_rows) {
  if (names->size() != out.size()) {
    return Status(StatusCode::kModelInvalid, "its outputs and their names do not match");
  }
  std::string shapes;
  for (const cv::Mat& m : out) shapes += (shapes.empty() ? "" : ", ") + ShapeText(m);
  const Status not_blazeface(StatusCode::kModelInvalid,
                             "its outputs are not BlazeFace's (two score tensors [1,N,1] and two "
                             "box tensors [1,N,16]); it has " +
                                 std::to_string(out.size()) + ": " + shapes);
  if (out.size() != 4) return not_blazeface;
  std::vector<std::pair<int, std::string>> scores, boxes;  // rows, name
  for (size_t i = 0; i < out.size(); ++i) {
    if (Rows(out[i], 1) > 0) scores.emplace_back(Rows(out[i], 1), (*names)[i]);
    if (Rows(out[i], kBlazeFaceValuesPerAnchor) > 0) {
      boxes.emplace_back(Rows(out[i], kBlazeFaceValuesPerAnchor), (*names)[i]);
    }
  }
  if (scores.size() != 2 || boxes.size() != 2) return not_blazeface;
  auto more_first = [](const auto& a, const auto& b) { return a.first > b.first; };
  std::sort(scores.begin(), scores.end(), more_first);
  std::sort(boxes.begin(), boxes.end(), more_first);
  if (scores[0].first != boxes[0].first || scores[1].first != boxes[1].first) {
    return not_blazeface;
  }
  *names = {scores[0].second, scores[1].second, boxes[0].second, boxes[1].second};
  *total_rows = scores[0].first + scores[1].first;
  return Status::Ok();
}

}  // namespace

Result<FaceDetector> FaceDetector::Load(const std::vector<uint8_t>& onnx,
                                        const std::string& name,
                                        const FaceDetectorOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  const std::string what = "face detector " + name;
  // A net that failed to run is not run again (OpenCV 4.6 crashed doing so): each probe reads
  // the file anew.
  auto read = [&](cv::dnn::Net* net) -> Status {
    try {
      *net = cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(onnx.data()), onnx.size());
    } catch (const cv::Exception& e) {
      return Status(StatusCode::kModelInvalid,
                    what + ": OpenCV " CV_VERSION " cannot read it as ONNX: " + e.what());
    }
    if (net->empty()) {
      return Status(StatusCode::kModelInvalid, what + ": OpenCV " CV_VERSION " read no network");
    }
    net->setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net->setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    return Status::Ok();
  };

  // The probe: a blank picture at each of BlazeFace's sizes; the model's own is the one it runs
  // at and answers with 896 anchors (the long-range file pads with constants of its own size and
  // fails at any other; the short-range one runs at 256 too, with four times the anchors).
  // OpenCV logs its own errors as it fails; they are quiet here and the reasons are reported.
  const cv::utils::logging::LogLevel level =
      cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
  std::string reasons;
  int size = 0;
  for (int s : kInputSizes) {
    Status readable = read(&impl->net);
    if (!readable.ok()) {
      cv::utils::logging::setLogLevel(level);
      return readable;
    }
    impl->outputs = impl->net.getUnconnectedOutLayersNames();
    const int dims[] = {1, s, s, 3};
    Result<std::vector<cv::Mat>> out = impl->Run(cv::Mat(4, dims, CV_32F, cv::Scalar(0)));
    if (!out.ok()) {
      reasons += "; at " + std::to_string(s) + " pixels: " + out.status().message();
      continue;
    }
    std::vector<std::string> names = impl->outputs;
    int total_rows = 0;
    Status sorted = SortOutputs(*out, &names, &total_rows);
    if (!sorted.ok()) {
      reasons += "; at " + std::to_string(s) + " pixels: " + sorted.message();
      continue;
    }
    if (static_cast<size_t>(total_rows) != BlazeFaceAnchors(s).size()) {
      reasons += "; at " + std::to_string(s) + " pixels: " + std::to_string(total_rows) +
                 " anchors, not " + std::to_string(BlazeFaceAnchors(s).size());
      continue;
    }
    impl->outputs = names;
    size = s;
    break;
  }
  cv::utils::logging::setLogLevel(level);
  if (size == 0) {
    return Status(StatusCode::kModelInvalid,
                  what + ": OpenCV " CV_VERSION " reads it but it runs as no BlazeFace model" +
                      reasons);
  }
  impl->anchors = BlazeFaceAnchors(size);
  impl->input_size = size;
  return FaceDetector(std::move(impl));
}

Result<std::vector<Face>> FaceDetector::Detect(const ImageView& image) {
  if (image.pixels == nullptr || image.width <= 0 || image.height <= 0 ||
      image.row_bytes < int64_t{image.width} * 3) {
    return Status(StatusCode::kInputInvalid, "face detection: an empty picture or bad row size");
  }
  Impl& d = *impl_;
  const int s = d.input_size;
  const cv::Mat frame(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.pixels),
                      static_cast<size_t>(image.row_bytes));
  const Letterbox box = FitInto(image.width, image.height, s);
  // Shrinking: INTER_AREA averages the pixels a sample covers (no aliasing from a 1080p frame);
  // growing (a frame smaller than the input): bilinear.
  const bool shrink = box.width < image.width;
  cv::resize(frame, d.resized, cv::Size(box.width, box.height), 0, 0,
             shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
  d.canvas.create(s, s, CV_8UC3);
  d.canvas.setTo(cv::Scalar::all(0));
  d.resized.copyTo(d.canvas(cv::Rect(static_cast<int>(box.pad_x), static_cast<int>(box.pad_y),
                                     box.width, box.height)));
  if (image.order == ChannelOrder::kBgr) cv::cvtColor(d.canvas, d.canvas, cv::COLOR_BGR2RGB);
  // [0, 255] -> [-1, 1]; the S x S x 3 floats, row by row, are the [1, S, S, 3] input as is.
  d.canvas.convertTo(d.input, CV_32FC3, 1.0 / 127.5, -1.0);
  const int dims[] = {1, s, s, 3};
  const cv::Mat blob(4, dims, CV_32F, d.input.ptr<float>());
  Result<std::vector<cv::Mat>> out = d.Run(blob);
  if (!out.ok()) return out.status().WithContext("face detection");
  // The two maps' scores and boxes, joined in anchor order.
  std::vector<float> scores, boxes;
  for (int m = 0; m < 2; ++m) {
    const cv::Mat& sc = (*out)[m];
    const cv::Mat& bx = (*out)[2 + m];
    scores.insert(scores.end(), sc.ptr<float>(), sc.ptr<float>() + sc.total());
    boxes.insert(boxes.end(), bx.ptr<float>(), bx.ptr<float>() + bx.total());
  }
  if (scores.size() != d.anchors.size() ||
      boxes.size() != d.anchors.size() * kBlazeFaceValuesPerAnchor) {
    return Status(StatusCode::kModelInvalid, "face detection: the model answered with " +
                                                 std::to_string(scores.size()) + " anchors, not " +
                                                 std::to_string(d.anchors.size()));
  }
  std::vector<Face> raw =
      DecodeBlazeFace(scores.data(), boxes.data(), d.anchors, s, d.options.min_score);
  std::vector<Face> faces = WeightedNms(std::move(raw), d.options.nms_iou, d.options.max_faces);
  // A box wholly in the letterbox's padding has nothing of the frame in it: no face.
  std::vector<Face> in_frame;
  for (const Face& f : faces) {
    Face mapped = ToFrame(f, box, image.width, image.height);
    if (mapped.width > 0 && mapped.height > 0) in_frame.push_back(mapped);
  }
  return in_frame;
}

#else  // no OpenCV dnn in this build

struct FaceDetector::Impl {
  int input_size = 0;
};

Result<FaceDetector> FaceDetector::Load(const std::vector<uint8_t>&, const std::string& name,
                                        const FaceDetectorOptions&) {
  return Status(StatusCode::kInternal,
                "face detector " + name +
                    ": this framemill was built without OpenCV's dnn module, which face "
                    "detection needs (Debian: libopencv-dev; then configure again)");
}

Result<std::vector<Face>> FaceDetector::Detect(const ImageView&) {
  return Status(StatusCode::kInternal, "this framemill was built without OpenCV's dnn module");
}

#endif

FaceDetector::FaceDetector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FaceDetector::FaceDetector(FaceDetector&&) noexcept = default;
FaceDetector& FaceDetector::operator=(FaceDetector&&) noexcept = default;
FaceDetector::~FaceDetector() = default;
int FaceDetector::input_size() const { return impl_->input_size; }

}  // namespace framemill
