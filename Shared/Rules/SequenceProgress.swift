/// Where a sign-in stands against the sequences a rule offered: any one sequence completes it.
///
/// A sequence is a list of methods; the methods completed so far count against it as a
/// multiset (order is free, and a method listed twice — `["fido2", "fido2"]`, two different
/// credentials — must be completed twice). A sequence stays possible while every completed
/// method fits in it; what is left of it is its remainder.
public struct SequenceProgress: Sendable, Hashable {
    public let sequences: [[String]]
    public let completed: [String]

    public init(sequences: [[String]], completed: [String]) {
        self.sequences = sequences
        self.completed = completed
    }

    /// The remainder of each sequence still possible, in the sequences' order.
    public var remaining: [[String]] {
        sequences.compactMap { Self.remainder(of: $0, completed: completed) }
    }

    /// The first sequence completed, if any.
    public var satisfied: [String]? {
        sequences.first { Self.remainder(of: $0, completed: completed)?.isEmpty == true }
    }

    /// Whether `method` is a next step of some sequence still possible.
    public func allows(_ method: String) -> Bool {
        remaining.contains { $0.contains(method) }
    }

    /// Whether no sequence can be completed any more.
    public var isExhausted: Bool { remaining.isEmpty }

    static func remainder(of sequence: [String], completed: [String]) -> [String]? {
        var left = sequence
        for method in completed {
            guard let i = left.firstIndex(of: method) else { return nil }
            left.remove(at: i)
        }
        return left
    }
}
