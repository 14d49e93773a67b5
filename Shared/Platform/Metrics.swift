import FoundationEssentials
import Synchronization

/// Dimensions (labels) of a metric, in a stable order.
public typealias Dimensions = [(String, String)]

/// A monotonically increasing counter, shaped like swift-metrics' `Counter`.
public struct Counter: Sendable {
    let series: MetricsRegistry.Series
    public init(label: String, dimensions: Dimensions = [], registry: MetricsRegistry = .shared) {
        series = registry.series(kind: .counter, name: label, dimensions: dimensions)
    }
    public func increment(by amount: Int = 1) { series.add(Double(amount)) }
}

/// A value that goes up and down, shaped like swift-metrics' `Gauge`.
public struct Gauge: Sendable {
    let series: MetricsRegistry.Series
    public init(label: String, dimensions: Dimensions = [], registry: MetricsRegistry = .shared) {
        series = registry.series(kind: .gauge, name: label, dimensions: dimensions)
    }
    public func record(_ value: Double) { series.set(value) }
    public func record(_ value: Int) { series.set(Double(value)) }
}

/// A latency histogram in seconds, shaped like swift-metrics' `Timer`.
public struct Timer: Sendable {
    let series: MetricsRegistry.Series
    public init(label: String, dimensions: Dimensions = [], registry: MetricsRegistry = .shared) {
        series = registry.series(kind: .histogram, name: label, dimensions: dimensions)
    }
    public func recordNanoseconds(_ ns: UInt64) { series.observe(Double(ns) / 1e9) }
    public func record(_ duration: Duration) {
        let c = duration.components
        series.observe(Double(c.seconds) + Double(c.attoseconds) / 1e18)
    }
}

/// Holds every metric series of the process and renders them in the Prometheus text format.
public final class MetricsRegistry: Sendable {
    /// The registry that `/metrics` renders.
    public static let shared = MetricsRegistry()

    /// Latency buckets in seconds.
    public static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    enum Kind: String, Sendable { case counter, gauge, histogram }

    struct Key: Hashable, Sendable {
        let name: String
        let labels: String
    }

    /// One time series; its storage is guarded by its own lock.
    final class Series: Sendable {
        let kind: Kind
        let name: String
        let labels: String
        private let state: PlainLock<State>

        struct State {
            var value: Double = 0
            var bucketCounts: [UInt64]
            var sum: Double = 0
            var count: UInt64 = 0
        }

        init(kind: Kind, name: String, labels: String) {
            self.kind = kind
            self.name = name
            self.labels = labels
            state = PlainLock(State(bucketCounts: Array(repeating: 0, count: MetricsRegistry.buckets.count)))
        }

        func add(_ v: Double) { state.withLock { $0.value += v } }
        func set(_ v: Double) { state.withLock { $0.value = v } }
        func observe(_ v: Double) {
            state.withLock { s in
                s.sum += v
                s.count += 1
                for (i, b) in MetricsRegistry.buckets.enumerated() where v <= b { s.bucketCounts[i] += 1 }
            }
        }
        func snapshot() -> State { state.withLock { $0 } }
    }

    private let series = PlainLock<[Key: Series]>([:])

    public init() {}

    func series(kind: Kind, name: String, dimensions: Dimensions) -> Series {
        let labels = dimensions.map { "\($0.0)=\(promEscape($0.1))" }.joined(separator: ",")
        let key = Key(name: name, labels: labels)
        return series.withLock { all in
            if let existing = all[key] { return existing }
            let s = Series(kind: kind, name: name, labels: labels)
            all[key] = s
            return s
        }
    }

    /// The Prometheus text exposition (version 0.0.4) of every series.
    public func render() -> String {
        let all = series.withLock { Array($0.values) }
        let byName = Dictionary(grouping: all, by: \.name)
        var out = ""
        for name in byName.keys.sorted() {
            let group = byName[name]!.sorted { $0.labels < $1.labels }
            out += "# TYPE \(name) \(group[0].kind.rawValue)\n"
            for s in group {
                let snap = s.snapshot()
                switch s.kind {
                case .counter, .gauge:
                    out += "\(name)\(braces(s.labels)) \(format(snap.value))\n"
                case .histogram:
                    for (i, b) in MetricsRegistry.buckets.enumerated() {
                        out += "\(name)_bucket\(braces(join(s.labels, "le=\"\(format(b))\""))) \(snap.bucketCounts[i])\n"
                    }
                    out += "\(name)_bucket\(braces(join(s.labels, "le=\"+Inf\""))) \(snap.count)\n"
                    out += "\(name)_sum\(braces(s.labels)) \(format(snap.sum))\n"
                    out += "\(name)_count\(braces(s.labels)) \(snap.count)\n"
                }
            }
        }
        return out
    }

    private func braces(_ labels: String) -> String { labels.isEmpty ? "" : "{\(labels)}" }
    private func join(_ a: String, _ b: String) -> String { a.isEmpty ? b : "\(a),\(b)" }
    private func format(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}

private func promEscape(_ s: String) -> String {
    var out = "\""
    for c in s {
        switch c {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\\n"
        default: out.append(c)
        }
    }
    return out + "\""
}
