import JSON

/// A JSON scalar as predicates compare them: numbers as `Double`, so that 1 equals 1.0.
enum Scalar: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// Any JSON number.
    case number(Double)
    /// A string.
    case string(String)
}

/// A predicate's `value`, checked against its operator and parsed once: numbers as `Double`,
/// CIDR blocks parsed, location lists resolved.
///
/// ``compile(_:_:at:locations:)`` is both the check (when a predicate is read, without
/// locations) and the first step of compiling (with them).
enum Operand: Sendable {
    /// `eq`, `ne`.
    case equals(Scalar)
    /// `contains`.
    case contains(Scalar)
    /// `gt`, `gte`, `lt`, `lte` with a number.
    case orderedNumber(FactTest.Order, Double)
    /// `gt`, `gte`, `lt`, `lte` with a string.
    case orderedString(FactTest.Order, String)
    /// `in`, `notIn`.
    case list([Scalar])
    /// `exists`.
    case flag(Bool)
    /// `inCidr`.
    case blocks([CIDRBlock])
    /// `withinKm`: the distance and the points (none when only checking a list name).
    case near(km: Double, points: [GeoPoint])

    /// Checks `value` for `op` and parses it.
    ///
    /// - Parameters:
    ///   - op: The operator.
    ///   - value: The predicate's `value`.
    ///   - path: The path of `value`.
    ///   - locations: The tenant's location lists, or `nil` to check only the shape of a list
    ///     name (when a ruleset is read, before compiling).
    /// - Throws: `invalid_operand`, `invalid_cidr`, `unknown_location_list`, `unknown_member`,
    ///   `missing_member` or `limit_exceeded` at the offending part of `value`.
    static func compile(
        _ op: RuleOperator, _ value: JSONValue, at path: NodePath, locations: [String: [GeoPoint]]?
    ) throws(RulesetError) -> Operand {
        switch op {
        case .eq, .ne:
            return .equals(try scalar(value, at: path, for: op))
        case .contains:
            return .contains(try scalar(value, at: path, for: op))
        case .gt: return try ordered(.greater, value, at: path, for: op)
        case .gte: return try ordered(.greaterOrEqual, value, at: path, for: op)
        case .lt: return try ordered(.less, value, at: path, for: op)
        case .lte: return try ordered(.lessOrEqual, value, at: path, for: op)
        case .in, .notIn:
            guard case .array(let elements) = value else { throw mismatch(op, at: path) }
            try checkCount(elements, at: path)
            var list: [Scalar] = []
            list.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() {
                list.append(try scalar(element, at: path.index(i), for: op))
            }
            return .list(list)
        case .exists:
            guard case .bool(let flag) = value else { throw mismatch(op, at: path) }
            return .flag(flag)
        case .inCidr:
            return .blocks(try blocks(value, at: path))
        case .withinKm:
            return try near(value, at: path, locations: locations)
        }
    }

    // MARK: - Parts

    private static func scalar(_ value: JSONValue, at path: NodePath, for op: RuleOperator) throws(RulesetError)
        -> Scalar
    {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .number(Double(number))
        case .double(let number):
            guard number.isFinite else {
                throw RulesetError(.invalidOperand, at: path, "numbers must be finite")
            }
            return .number(number)
        case .string(let text):
            try StringRules.checkLength(text, at: path)
            return .string(text)
        case .array, .object:
            throw mismatch(op, at: path)
        }
    }

    private static func ordered(_ order: FactTest.Order, _ value: JSONValue, at path: NodePath, for op: RuleOperator)
        throws(RulesetError) -> Operand
    {
        switch try scalar(value, at: path, for: op) {
        case .number(let number): .orderedNumber(order, number)
        case .string(let text): .orderedString(order, text)
        case .null, .bool: throw mismatch(op, at: path)
        }
    }

    private static func blocks(_ value: JSONValue, at path: NodePath) throws(RulesetError) -> [CIDRBlock] {
        switch value {
        case .string(let text):
            return [try block(text, at: path)]
        case .array(let elements):
            try checkCount(elements, at: path)
            var blocks: [CIDRBlock] = []
            blocks.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() {
                guard case .string(let text) = element else { throw mismatch(.inCidr, at: path.index(i)) }
                blocks.append(try block(text, at: path.index(i)))
            }
            return blocks
        default:
            throw mismatch(.inCidr, at: path)
        }
    }

    private static func block(_ text: String, at path: NodePath) throws(RulesetError) -> CIDRBlock {
        try StringRules.checkLength(text, at: path)
        switch CIDRBlock.parse(text) {
        case .success(let block): return block
        case .failure(let problem):
            throw RulesetError(.invalidCIDR, at: path, "the CIDR block \(RulesetError.quote(text)) \(problem.reason)")
        }
    }

    private static func near(_ value: JSONValue, at path: NodePath, locations: [String: [GeoPoint]]?)
        throws(RulesetError) -> Operand
    {
        guard case .object = value else { throw mismatch(.withinKm, at: path) }
        let reader = try ObjectReader(value, at: path, what: "a withinKm operand", allowed: ["km", "of"])
        let kmValue = try reader.required("km", "a distance in kilometres")
        guard let km = kmValue.doubleValue, km.isFinite, km > 0 else {
            throw RulesetError(.invalidOperand, at: path.member("km"), "km must be a positive number of kilometres")
        }
        let of = try reader.required("of", "a point {\"lat\": …, \"lon\": …} or a location list name")
        let ofPath = path.member("of")
        switch of {
        case .string(let name):
            try StringRules.checkLength(name, at: ofPath)
            guard let locations else { return .near(km: km, points: []) }
            guard let points = locations[name] else {
                throw RulesetError(
                    .unknownLocationList, at: ofPath, "the tenant has no location list \(RulesetError.quote(name))")
            }
            return .near(km: km, points: points)
        case .object:
            let point = try ObjectReader(of, at: ofPath, what: "a point", allowed: ["lat", "lon"])
            let lat = try point.required("lat", "degrees north, -90 to 90")
            let lon = try point.required("lon", "degrees east, -180 to 180")
            guard let latitude = lat.doubleValue, latitude.isFinite, (-90...90).contains(latitude) else {
                throw RulesetError(.invalidOperand, at: ofPath.member("lat"), "lat must be a number from -90 to 90")
            }
            guard let longitude = lon.doubleValue, let geo = GeoPoint(latitude: latitude, longitude: longitude) else {
                throw RulesetError(.invalidOperand, at: ofPath.member("lon"), "lon must be a number from -180 to 180")
            }
            return .near(km: km, points: [geo])
        default:
            throw RulesetError(
                .invalidOperand, at: ofPath, "of must be a point {\"lat\": …, \"lon\": …} or a location list name")
        }
    }

    private static func checkCount(_ elements: [JSONValue], at path: NodePath) throws(RulesetError) {
        guard elements.count <= Ruleset.Limits.listEntries else {
            throw RulesetError(
                .limitExceeded, at: path, "lists have at most \(Ruleset.Limits.listEntries) entries")
        }
    }

    private static func mismatch(_ op: RuleOperator, at path: NodePath) -> RulesetError {
        RulesetError(.invalidOperand, at: path, "the value of \(op.rawValue) must be \(op.operandDescription)")
    }
}
