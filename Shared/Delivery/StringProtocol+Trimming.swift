extension StringProtocol {
    /// The text without leading and trailing white space (spaces, tabs, line breaks).
    func trimmingWhiteSpace() -> SubSequence {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}
