import JSON

/// A request's facts laid out for one compiled ruleset: every fact path the ruleset uses
/// resolved once, numbers as `Double`, strings with their operand ids, IP addresses and
/// positions parsed where a rule tests them.
///
/// Made by ``CompiledRuleset/prepare(_:)`` and consumed by ``CompiledRuleset/evaluate(_:)-(PreparedFacts)``,
/// which then neither allocates nor hashes. Prepared facts belong to the compiled ruleset that
/// made them; evaluating them with another is a programming error and traps.
public struct PreparedFacts: Sendable {
    /// The program whose fact table laid out ``slots``.
    let program: RuleProgram
    /// One entry per interned path, in the order of the program's fact table.
    let slots: [PreparedFact]

    /// Facts laid out by `program`'s fact table.
    init(program: RuleProgram, slots: [PreparedFact]) {
        self.program = program
        self.slots = slots
    }

    /// The number of fact paths resolved (the ruleset's paths and their prefixes).
    public var count: Int { slots.count }

    /// How many of the resolved paths were present in the facts.
    public var presentCount: Int {
        slots.count { if case .missing = $0.value { false } else { true } }
    }
}

/// One resolved fact path.
struct PreparedFact: Sendable {
    /// The fact's value.
    let value: FactValue
    /// The address, when the path is tested by `inCidr` and the fact is a valid IP address.
    let address: IPAddress?
    /// The position, when the path is tested by `withinKm` and the fact is a valid point.
    let position: GeoTrig?

    /// The missing fact.
    static let missing = PreparedFact(value: .missing, address: nil, position: nil)

    /// A prepared fact from its parts.
    init(value: FactValue, address: IPAddress?, position: GeoTrig?) {
        self.value = value
        self.address = address
        self.position = position
    }

    /// Prepares the JSON value at a path.
    ///
    /// - Parameters:
    ///   - json: The value, `nil` when missing.
    ///   - entry: The path's entry in the fact table: what its tests need parsed.
    ///   - table: The fact table, to give string facts their operand ids.
    init(_ json: JSONValue?, entry: FactTable.Entry, table: FactTable) {
        guard let json else {
            self = .missing
            return
        }
        var address: IPAddress?
        var position: GeoTrig?
        let value: FactValue
        switch json {
        case .null: value = .null
        case .bool(let flag): value = .bool(flag)
        case .int(let number): value = .number(Double(number))
        case .double(let number): value = .number(number)
        case .string(let text):
            value = .string(text, id: entry.needsStringID ? table.id(of: text) : FactTable.absentString)
            if entry.needsAddress { address = IPAddress(text) }
        case .array(let elements):
            var ids: [Int32] = []
            if entry.needsElementIDs {
                for case .string(let text) in elements {
                    let id = table.id(of: text)
                    if id != FactTable.absentString { ids.append(id) }
                }
            }
            value = .array(elements, ids: ids)
        case .object(let members):
            value = .object(members)
            if entry.needsPosition, let point = GeoPoint(json: json) { position = GeoTrig(point) }
        }
        self.init(value: value, address: address, position: position)
    }
}

/// A fact's value as tests read it.
enum FactValue: Sendable {
    /// Absent, or under something that is not an object.
    case missing
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// Any JSON number.
    case number(Double)
    /// A string and its operand id (``FactTable/absentString`` when no operand is that string).
    case string(String, id: Int32)
    /// An array, with the operand ids of its string elements when a `contains` tests it.
    case array([JSONValue], ids: [Int32])
    /// An object; its members are where the paths below it are looked up.
    case object([String: JSONValue])
}
