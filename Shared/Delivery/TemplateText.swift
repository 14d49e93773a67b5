/// One template text split into literal runs and placeholders.
struct TemplateText: Sendable {
    private enum Segment: Sendable {
        case literal(String)
        case placeholder(TemplatePlaceholder)
    }

    private let segments: [Segment]

    /// Parses `{{name}}` placeholders; a `}}` outside one, or a lone `{` or `}`, is literal text.
    ///
    /// - Parameters:
    ///   - text: The template text.
    ///   - part: Which part it is, for the error's detail.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/templateInvalid``.
    init(_ text: String, part: String) throws {
        var segments: [Segment] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{") {
            if open.lowerBound > rest.startIndex {
                segments.append(.literal(String(rest[..<open.lowerBound])))
            }
            let afterOpen = rest[open.upperBound...]
            guard let close = afterOpen.firstRange(of: "}}") else {
                throw DeliveryError(.templateInvalid, detail: "unclosed {{ in \(part)")
            }
            let name = afterOpen[..<close.lowerBound].trimmingWhiteSpace()
            guard let placeholder = TemplatePlaceholder(rawValue: String(name)) else {
                // The name is template text written by an operator, not personal data; cut it
                // short all the same.
                throw DeliveryError(.templateInvalid, detail: "unknown placeholder \(name.prefix(32)) in \(part)")
            }
            segments.append(.placeholder(placeholder))
            rest = afterOpen[close.upperBound...]
        }
        if !rest.isEmpty { segments.append(.literal(String(rest))) }
        self.segments = segments
    }

    /// The placeholders used.
    var placeholders: Set<TemplatePlaceholder> {
        Set(segments.compactMap { if case .placeholder(let p) = $0 { p } else { nil } })
    }

    /// The text with values inserted, HTML-escaped when `escapeHTML` is set.
    func render(_ values: TemplateValues, escapeHTML: Bool) throws -> String {
        var result = ""
        for segment in segments {
            switch segment {
            case .literal(let text):
                result += text
            case .placeholder(let placeholder):
                guard let value = values[placeholder] else {
                    throw DeliveryError(.templateValueMissing, detail: "no value for {{\(placeholder.rawValue)}}")
                }
                result += escapeHTML ? Self.escapingHTML(value) : value
            }
        }
        return result
    }

    /// The text with `& < > " '` written as character references, safe in element content and
    /// in quoted attribute values.
    static func escapingHTML(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}
