import JSON

/// Any JSON value, for the members of wire types that carry free-form JSON (sign-in signals
/// and context, ruleset documents, explain facts): the strict parser's own value tree, so that
/// what a request carries reaches the rules without a conversion. Integers that fit in `Int64`
/// stay exact.
public typealias AnyJSON = JSONValue
