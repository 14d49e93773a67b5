import JSON

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A predicate compiled for one operator and one kind of operand, so that evaluation is one
/// switch and a comparison of pre-parsed values: numbers as `Double`, strings as ids of the
/// ``FactTable``, CIDR blocks as masks, points as precomputed trigonometry.
///
/// Bitwise-copyable: operands that are lists or strings are ranges of the program's
/// ``ProgramMemory/Tables``. `ne` and `notIn` compile to the test of `eq` and `in` with the
/// node negated, which gives them their documented results on missing facts and type
/// mismatches (true).
enum FactTest: Sendable, BitwiseCopyable {
    /// `eq null`: the fact is null (not missing).
    case equalsNull
    /// `eq` a Boolean.
    case equalsBool(Bool)
    /// `eq` a number: the fact is a number of that value.
    case equalsNumber(Double)
    /// `eq` a string: the fact is the string with this id.
    case equalsString(Int32)
    /// `gt`, `gte`, `lt`, `lte` a number.
    case orderNumber(Order, Double)
    /// `gt`, `gte`, `lt`, `lte` a string: compared with the UTF-8 in this range of `bytes`.
    case orderString(Order, PoolRange)
    /// `in`: one of the string ids and numbers in these ranges of `ids` and `numbers`, or a
    /// flagged null or Boolean.
    case member(ids: PoolRange, numbers: PoolRange, ScalarFlags)
    /// `contains null`: an array with a null element.
    case containsNull
    /// `contains` a Boolean: an array with that element.
    case containsBool(Bool)
    /// `contains` a number: an array with an element of that value.
    case containsNumber(Double)
    /// `contains` a string: an array with an element of this id, or a string with the substring
    /// in this range of `bytes` (and `failures`).
    case containsString(Int32, PoolRange)
    /// `exists`: the fact is present and not null (`true`), or not (`false`).
    case exists(Bool)
    /// In one of the blocks in this range of `blocks`.
    case inCidr(PoolRange)
    /// Within this haversine of one of the points in this range of `points`.
    case withinKm(PoolRange, maximumHaversine: Double)

    /// Whether `fact` passes the test (before any negation of the node).
    ///
    /// - Parameters:
    ///   - fact: The prepared fact, read in place: copying it out would count references to
    ///     its strings and arrays.
    ///   - tables: The program's tables, where ranges point.
    @inline(__always)
    func matches(_ fact: UnsafePointer<PreparedFact>, _ tables: ProgramMemory.Tables) -> Bool {
        switch self {
        case .equalsNull:
            if case .null = fact.pointee.value { return true }
        case .equalsBool(let expected):
            if case .bool(let actual) = fact.pointee.value { return actual == expected }
        case .equalsNumber(let expected):
            if case .number(let actual) = fact.pointee.value { return actual == expected }
        case .equalsString(let expected):
            if case .string(_, let id) = fact.pointee.value { return id == expected }
        case .orderNumber(let order, let bound):
            if case .number(let actual) = fact.pointee.value { return order.holds(actual, bound) }
        case .orderString(let order, let bound):
            if case .string(let actual, _) = fact.pointee.value {
                return order.holds(Self.compareUTF8(actual, bound.of(tables.bytes)), 0)
            }
        case .member(let ids, let numbers, let flags):
            switch fact.pointee.value {
            case .string(_, let id): return id != FactTable.absentString && Self.search(ids.of(tables.ids), id)
            case .number(let number): return Self.search(numbers.of(tables.numbers), number)
            case .bool(let flag): return flags.contains(flag ? .true : .false)
            case .null: return flags.contains(.null)
            case .missing, .array, .object: return false
            }
        case .containsNull:
            if case .array(let elements, _) = fact.pointee.value { return elements.contains(.null) }
        case .containsBool(let expected):
            if case .array(let elements, _) = fact.pointee.value { return elements.contains(.bool(expected)) }
        case .containsNumber(let expected):
            if case .array(let elements, _) = fact.pointee.value {
                return elements.contains { $0.doubleValue == expected }
            }
        case .containsString(let id, let pattern):
            switch fact.pointee.value {
            case .array(_, let ids): return ids.contains(id)
            case .string(let text, _):
                return Self.occurs(pattern.of(tables.bytes), failures: pattern.of(tables.failures), in: text)
            default: return false
            }
        case .exists(let expected):
            switch fact.pointee.value {
            case .missing, .null: return !expected
            default: return expected
            }
        case .inCidr(let blocks):
            if let address = fact.pointee.address {
                for block in blocks.of(tables.blocks) where block.contains(address) { return true }
            }
        case .withinKm(let points, let maximumHaversine):
            if let position = fact.pointee.position {
                for point in points.of(tables.points) where point.haversine(position) <= maximumHaversine {
                    return true
                }
            }
        }
        return false
    }

    // MARK: - Operands

    /// The comparison of `gt`, `gte`, `lt`, `lte`.
    enum Order: Sendable, BitwiseCopyable {
        /// `gt`.
        case greater
        /// `gte`.
        case greaterOrEqual
        /// `lt`.
        case less
        /// `lte`.
        case lessOrEqual

        /// Whether `actual` compares with `bound` as this order says.
        @inline(__always)
        func holds<T: Comparable>(_ actual: T, _ bound: T) -> Bool {
            switch self {
            case .greater: actual > bound
            case .greaterOrEqual: actual >= bound
            case .less: actual < bound
            case .lessOrEqual: actual <= bound
            }
        }
    }

    /// The nulls and Booleans of an `in` list.
    struct ScalarFlags: OptionSet, Sendable, BitwiseCopyable {
        /// The flags as bits.
        let rawValue: UInt8
        /// The list has null.
        static let null = ScalarFlags(rawValue: 1)
        /// The list has `true`.
        static let `true` = ScalarFlags(rawValue: 2)
        /// The list has `false`.
        static let `false` = ScalarFlags(rawValue: 4)
    }

    /// Binary search in a sorted table.
    @inline(__always)
    private static func search<T: Comparable>(_ sorted: UnsafeBufferPointer<T>, _ target: T) -> Bool {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < target { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == target
    }

    /// Whether `pattern` occurs in `text`: Knuth–Morris–Pratt, so linear in the text however
    /// hostile it is, with `memchr` skipping to the next candidate first byte.
    private static func occurs(
        _ pattern: UnsafeBufferPointer<UInt8>, failures: UnsafeBufferPointer<Int32>, in text: String
    ) -> Bool {
        if pattern.isEmpty { return true }
        if let found = text.utf8.withContiguousStorageIfAvailable({ search(pattern, failures, $0) }) { return found }
        return Array(text.utf8).withUnsafeBufferPointer { search(pattern, failures, $0) }
    }

    private static func search(
        _ pattern: UnsafeBufferPointer<UInt8>, _ failures: UnsafeBufferPointer<Int32>,
        _ haystack: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard haystack.count >= pattern.count, let base = haystack.baseAddress else { return false }
        let first = pattern[0]
        var k = 0
        var i = 0
        while i < haystack.count {
            if k == 0 {
                // No partial match: jump to the next occurrence of the first byte.
                guard let next = memchr(base + i, Int32(first), haystack.count - i) else { return false }
                i = base.distance(to: next.assumingMemoryBound(to: UInt8.self))
            }
            let byte = haystack[i]
            while k > 0 && byte != pattern[k] { k = Int(failures[k - 1]) }
            if byte == pattern[k] { k += 1 }
            if k == pattern.count { return true }
            i += 1
        }
        return false
    }

    /// Negative, zero or positive as `lhs` sorts before, equal to or after the UTF-8 `rhs`.
    /// Comparing UTF-8 bytes compares Unicode scalars (UTF-8 preserves their order), without
    /// the normalization Swift's `<` applies.
    private static func compareUTF8(_ lhs: String, _ rhs: UnsafeBufferPointer<UInt8>) -> Int {
        if let result = lhs.utf8.withContiguousStorageIfAvailable({ compare($0, rhs) }) { return result }
        return Array(lhs.utf8).withUnsafeBufferPointer { compare($0, rhs) }
    }

    private static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(left.count, right.count)
        var i = 0
        while i < common {
            if left[i] != right[i] { return left[i] < right[i] ? -1 : 1 }
            i += 1
        }
        return left.count - right.count
    }
}
