/// A range of a ``ProgramMemory`` table: where one operand's entries are.
struct PoolRange: Sendable, BitwiseCopyable {
    /// The index of the first entry.
    let start: Int32
    /// The number of entries.
    let count: Int32

    /// The entries of `table` in this range.
    @inline(__always)
    func of<T>(_ table: UnsafeBufferPointer<T>) -> UnsafeBufferPointer<T> {
        UnsafeBufferPointer(rebasing: table[Int(start)..<Int(start + count)])
    }
}

/// The tables a compiled program evaluates from, laid out by the compiler as arrays and then
/// frozen into memory that never moves, so that evaluation reads them through plain pointers:
/// no bounds checks, no reference counting, no copy-on-write checks.
///
/// Every element type is bitwise-copyable; operands that are lists or strings live here as
/// ranges rather than as Swift arrays or strings inside the nodes, which keeps the nodes
/// bitwise-copyable too.
final class ProgramMemory: @unchecked Sendable {
    // Safe to share between threads: the buffers are written once, in `init`, before the
    // instance is published; afterwards they are only read, and they are freed in `deinit`,
    // when no reader can hold the instance any more.

    /// The tables, as the evaluation loop reads them.
    struct Tables {
        /// Every condition node of every rule, in pre-order.
        let nodes: UnsafeBufferPointer<RuleProgram.Node>
        /// The root node of each rule's condition; −1 for a rule without one.
        let roots: UnsafeBufferPointer<Int32>
        /// UTF-8 of string bounds (`gt`…) and of `contains` substrings.
        let bytes: UnsafeBufferPointer<UInt8>
        /// Knuth–Morris–Pratt failure tables of substrings, index for index with `bytes`.
        let failures: UnsafeBufferPointer<Int32>
        /// Sorted string ids of `in` lists.
        let ids: UnsafeBufferPointer<Int32>
        /// Sorted numbers of `in` lists.
        let numbers: UnsafeBufferPointer<Double>
        /// CIDR blocks of `inCidr`.
        let blocks: UnsafeBufferPointer<AddressBlock>
        /// Points of `withinKm`.
        let points: UnsafeBufferPointer<GeoTrig>
    }

    /// The tables as the compiler builds them.
    struct Builder {
        /// See ``Tables/nodes``.
        var nodes: [RuleProgram.Node] = []
        /// See ``Tables/roots``.
        var roots: [Int32] = []
        /// See ``Tables/bytes``.
        var bytes: [UInt8] = []
        /// See ``Tables/failures``.
        var failures: [Int32] = []
        /// See ``Tables/ids``.
        var ids: [Int32] = []
        /// See ``Tables/numbers``.
        var numbers: [Double] = []
        /// See ``Tables/blocks``.
        var blocks: [AddressBlock] = []
        /// See ``Tables/points``.
        var points: [GeoTrig] = []

        /// Appends `elements` to `table` and returns their range.
        static func append<T>(_ elements: some Collection<T>, to table: inout [T]) -> PoolRange {
            let start = table.count
            table.append(contentsOf: elements)
            return PoolRange(start: Int32(start), count: Int32(table.count - start))
        }

        /// Appends a `contains` substring with its failure table.
        mutating func appendPattern(_ text: String) -> PoolRange {
            let pattern = Array(text.utf8)
            var failure = [Int32](repeating: 0, count: pattern.count)
            var k = 0
            for i in pattern.indices.dropFirst() {
                while k > 0 && pattern[i] != pattern[k] { k = Int(failure[k - 1]) }
                if pattern[i] == pattern[k] { k += 1 }
                failure[i] = Int32(k)
            }
            // `failures` stays index for index with `bytes`.
            failures.append(contentsOf: repeatElement(0, count: bytes.count - failures.count))
            _ = Self.append(failure, to: &failures)
            return Self.append(pattern, to: &bytes)
        }
    }

    /// The frozen tables.
    let tables: Tables

    /// Freezes the builder's tables.
    init(_ builder: Builder) {
        tables = Tables(
            nodes: Self.freeze(builder.nodes), roots: Self.freeze(builder.roots), bytes: Self.freeze(builder.bytes),
            failures: Self.freeze(builder.failures), ids: Self.freeze(builder.ids),
            numbers: Self.freeze(builder.numbers), blocks: Self.freeze(builder.blocks),
            points: Self.freeze(builder.points))
    }

    deinit {
        tables.nodes.deallocate()
        tables.roots.deallocate()
        tables.bytes.deallocate()
        tables.failures.deallocate()
        tables.ids.deallocate()
        tables.numbers.deallocate()
        tables.blocks.deallocate()
        tables.points.deallocate()
    }

    /// A copy of `elements` in memory owned by this instance.
    private static func freeze<T: BitwiseCopyable>(_ elements: [T]) -> UnsafeBufferPointer<T> {
        // Allocate at least one element so that every table has a base address to free.
        let memory = UnsafeMutableBufferPointer<T>.allocate(capacity: max(elements.count, 1))
        _ = memory.initialize(fromContentsOf: elements)
        return UnsafeBufferPointer(start: memory.baseAddress, count: elements.count)
    }
}
