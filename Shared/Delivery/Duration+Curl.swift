extension Duration {
    /// The duration in whole milliseconds, at least 1, for libcurl's `_MS` options.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
