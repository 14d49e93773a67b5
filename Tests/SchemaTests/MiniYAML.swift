import Foundation

/// Reads the block-style YAML subset that `schemas/openapi/*.yaml` is written in, producing the
/// tree `JSONSerialization` produces: `[String: Any]`, `[Any]`, `String`, `Int`, `Double`,
/// `Bool` and `NSNull`.
///
/// Supported: block mappings and sequences (a sequence may sit at its key's indentation),
/// `- key: value` items, comments, plain scalars, single- and double-quoted scalars, and flow
/// sequences of scalars (`[a, 'b']`, nested `[[a]]`, `[]`) and the empty flow mapping `{}`.
/// Anything else — tabs, anchors, aliases, tags, block scalars (`|`, `>`), multi-line scalars,
/// non-empty flow mappings, complex keys, directives, several documents — throws a
/// ``ParseError`` with the line number, rather than being read differently from a real YAML
/// parser. So do constructs that YAML 1.1 readers (PyYAML) would read differently from YAML 1.2
/// (`yes`, `on`, dates, unquoted numeric keys), so that both readers see the same document.
enum MiniYAML {
    /// Why a document could not be read; `line` is 1-based.
    struct ParseError: Error, Equatable, CustomStringConvertible {
        let line: Int
        let message: String
        var description: String { "line \(line): \(message)" }
    }

    /// Parses one document.
    /// - Throws: ``ParseError`` on anything outside the subset.
    static func parse(_ text: String) throws -> Any {
        var parser = Parser(lines: try logicalLines(text))
        return try parser.parseDocument()
    }

    // MARK: - Lines

    /// A non-blank line without its indentation, comment and trailing spaces.
    struct Line {
        let number: Int
        var indent: Int
        var text: Substring
    }

    static func logicalLines(_ text: String) throws -> [Line] {
        var result: [Line] = []
        // By Character, "\r\n" is one newline, so CRLF files split like LF files.
        for (i, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = i + 1
            if line.contains("\t") { throw ParseError(line: number, message: "tab characters are not supported") }
            let content = stripComment(line.drop(while: { $0 == " " }))
            if content.isEmpty { continue }
            let indent = line.prefix(while: { $0 == " " }).count
            if indent == 0 && (content == "---" || content == "..." || content.hasPrefix("--- ")) {
                throw ParseError(line: number, message: "document markers (--- and ...) are not supported")
            }
            if indent == 0 && content.hasPrefix("%") {
                throw ParseError(line: number, message: "directives (%YAML, %TAG) are not supported")
            }
            result.append(Line(number: number, indent: indent, text: content))
        }
        return result
    }

    /// Drops a `#` comment (at the start or after a space, outside quotes) and trailing spaces.
    private static func stripComment(_ s: Substring) -> Substring {
        var quote: Character?
        var previous: Character = " "
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if let q = quote {
                if q == "\"" && c == "\\" {
                    i = s.index(after: i)
                    if i == s.endIndex { break }
                } else if c == q {
                    // '' inside a single-quoted scalar is an escaped quote, not the end.
                    let next = s.index(after: i)
                    if q == "'" && next < s.endIndex && s[next] == "'" { i = next } else { quote = nil }
                }
            } else if c == "#" && (previous == " " || i == s.startIndex) {
                return trimTrailingSpaces(s[..<i])
            } else if (c == "'" || c == "\"") && " [,-:".contains(previous) {
                // A quote opens a quoted scalar only where a scalar can start.
                quote = c
            }
            previous = c
            i = s.index(after: i)
        }
        return trimTrailingSpaces(s)
    }

    private static func trimTrailingSpaces(_ s: Substring) -> Substring {
        var end = s.endIndex
        while end > s.startIndex && s[s.index(before: end)] == " " { end = s.index(before: end) }
        return s[..<end]
    }

    // MARK: - Block structure

    private struct Parser {
        var lines: [Line]
        var index = 0

        mutating func parseDocument() throws -> Any {
            guard let first = lines.first else { return NSNull() }
            let value = try parseNode(indent: first.indent)
            if index < lines.count {
                throw ParseError(line: lines[index].number, message: "unexpected content after the end of the document's root")
            }
            return value
        }

        /// Parses the block (mapping, sequence or lone scalar) whose first line is `lines[index]`.
        mutating func parseNode(indent: Int) throws -> Any {
            let line = lines[index]
            if isSequenceItem(line.text) { return try parseSequence(indent: indent) }
            if try MiniYAML.splitKey(line.text, line: line.number) != nil { return try parseMapping(indent: indent) }
            // A scalar alone on its line: only valid as a sequence item's value, which
            // parseSequence handles, or as a whole document.
            index += 1
            let value = try MiniYAML.scalar(line.text, line: line.number)
            try rejectContinuation(after: line, indent: indent)
            return value
        }

        mutating func parseMapping(indent: Int) throws -> Any {
            var result: [String: Any] = [:]
            while index < lines.count {
                let line = lines[index]
                if line.indent < indent { break }
                if line.indent > indent { throw ParseError(line: line.number, message: "unexpected indentation") }
                if isSequenceItem(line.text) {
                    throw ParseError(line: line.number, message: "a sequence item where a mapping key was expected")
                }
                guard let (key, rest) = try MiniYAML.splitKey(line.text, line: line.number) else {
                    throw ParseError(
                        line: line.number,
                        message: "expected 'key: value' (multi-line scalars are not supported)")
                }
                if result[key] != nil { throw ParseError(line: line.number, message: "duplicate key '\(key)'") }
                index += 1
                result[key] = try parseValue(rest, of: line, indent: indent, allowSequenceAtSameIndent: true)
            }
            return result
        }

        mutating func parseSequence(indent: Int) throws -> Any {
            var result: [Any] = []
            while index < lines.count {
                let line = lines[index]
                if line.indent < indent { break }
                if line.indent > indent { throw ParseError(line: line.number, message: "unexpected indentation") }
                guard isSequenceItem(line.text) else { break }
                let rest = line.text.dropFirst().drop(while: { $0 == " " })
                if rest.isEmpty {
                    index += 1
                    result.append(try parseValue(rest, of: line, indent: indent, allowSequenceAtSameIndent: false))
                } else {
                    // `- key: value` or `- - x`: the item's content is a block that starts at the
                    // column after the dash; re-read this line as that block's first line.
                    let column = line.indent + line.text.distance(from: line.text.startIndex, to: rest.startIndex)
                    lines[index] = Line(number: line.number, indent: column, text: rest)
                    result.append(try parseNode(indent: column))
                }
            }
            return result
        }

        /// The value after `key:` or `-`: inline on the line, or the indented block below it.
        mutating func parseValue(_ rest: Substring, of line: Line, indent: Int, allowSequenceAtSameIndent: Bool) throws -> Any {
            if !rest.isEmpty {
                let value = try MiniYAML.scalar(rest, line: line.number)
                try rejectContinuation(after: line, indent: indent)
                return value
            }
            guard index < lines.count else { return NSNull() }
            let next = lines[index]
            if next.indent > indent { return try parseNode(indent: next.indent) }
            if allowSequenceAtSameIndent && next.indent == indent && isSequenceItem(next.text) {
                return try parseSequence(indent: indent)
            }
            return NSNull()
        }

        /// A deeper-indented line after an inline value would continue a multi-line scalar.
        func rejectContinuation(after line: Line, indent: Int) throws {
            if index < lines.count && lines[index].indent > indent {
                throw ParseError(
                    line: lines[index].number,
                    message: "unexpected indentation (multi-line scalars are not supported)")
            }
        }

        func isSequenceItem(_ text: Substring) -> Bool { text == "-" || text.hasPrefix("- ") }
    }

    // MARK: - Keys and scalars

    /// Splits `key: rest` (the separator is a colon followed by a space or the end of the line,
    /// outside quotes); nil when the line is not a mapping entry.
    static func splitKey(_ text: Substring, line: Int) throws -> (String, Substring)? {
        if text.hasPrefix("? ") || text == "?" {
            throw ParseError(line: line, message: "complex keys (?) are not supported")
        }
        if let q = text.first, q == "'" || q == "\"" {
            let (key, end) = try quoted(text, line: line)
            let after = text[end...]
            guard after.first == ":" else { return nil }
            let rest = after.dropFirst()
            guard rest.isEmpty || rest.first == " " else { return nil }
            return (key, rest.drop(while: { $0 == " " }))
        }
        if text.hasPrefix("[") || text.hasPrefix("{") { return nil }
        var i = text.startIndex
        while i < text.endIndex {
            if text[i] == ":" {
                let next = text.index(after: i)
                if next == text.endIndex || text[next] == " " {
                    let key = text[..<i]
                    try checkPlainKey(key, line: line)
                    return (String(key), text[next...].drop(while: { $0 == " " }))
                }
            }
            i = text.index(after: i)
        }
        return nil
    }

    private static func checkPlainKey(_ key: Substring, line: Int) throws {
        if key.isEmpty { throw ParseError(line: line, message: "empty key") }
        if let c = key.first, "&*!|>%@`'\"[]{},#".contains(c) {
            throw ParseError(line: line, message: "'\(c)' at the start of a plain key is not supported")
        }
        // JSON keys are strings; a YAML reader would make `200:` an integer and `true:` a boolean.
        if !(try resolvedPlain(key, line: line) is String) {
            throw ParseError(line: line, message: "key '\(key)' would not be read as a string by YAML; quote it")
        }
    }

    /// An inline value: quoted scalar, flow collection or plain scalar.
    static func scalar(_ text: Substring, line: Int) throws -> Any {
        guard let first = text.first else { return NSNull() }
        switch first {
        case "'", "\"":
            let (value, end) = try quoted(text, line: line)
            guard end == text.endIndex else {
                throw ParseError(line: line, message: "unexpected text after a quoted scalar")
            }
            return value
        case "[":
            var flow = FlowReader(text: text, line: line)
            let value = try flow.readSequence()
            guard flow.atEnd else { throw ParseError(line: line, message: "unexpected text after a flow sequence") }
            return value
        case "{":
            guard text == "{}" else { throw ParseError(line: line, message: "flow mappings ({...}) are not supported") }
            return [String: Any]()
        case "&": throw ParseError(line: line, message: "anchors (&) are not supported")
        case "*": throw ParseError(line: line, message: "aliases (*) are not supported")
        case "!": throw ParseError(line: line, message: "tags (!) are not supported")
        case "|", ">": throw ParseError(line: line, message: "block scalars (| and >) are not supported")
        case "%", "@", "`": throw ParseError(line: line, message: "'\(first)' cannot start a plain scalar")
        case "-" where text == "-" || text.hasPrefix("- "):
            throw ParseError(line: line, message: "a sequence cannot start on the line of its key")
        default:
            if text.contains(": ") || text.hasSuffix(":") {
                throw ParseError(line: line, message: "': ' inside a plain scalar; quote the scalar")
            }
            return try resolvedPlain(text, line: line)
        }
    }

    /// Resolves a plain scalar, refusing those that YAML 1.1 readers such as PyYAML would read
    /// as something else than the YAML 1.2 core schema does.
    private static func resolvedPlain(_ text: Substring, line: Int) throws -> Any {
        let lower = text.lowercased()
        if ["yes", "no", "on", "off"].contains(lower) {
            throw ParseError(line: line, message: "'\(text)' is a boolean in YAML 1.1 and a string in YAML 1.2; quote it")
        }
        // Everything below starts with a digit, a sign or a dot; most scalars do not.
        guard let first = text.first, first.isASCII && (first.isNumber || "+-.".contains(first)) else {
            return plainValue(text)
        }
        if text.wholeMatch(of: /[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?/) != nil {
            throw ParseError(line: line, message: "'\(text)' would be read as a timestamp by YAML 1.1; quote it")
        }
        let ambiguousNumber =
            [".inf", "-.inf", "+.inf", ".nan"].contains(lower)
            || text.wholeMatch(of: /[-+]?0[0-9]+/) != nil  // octal in YAML 1.1
            || text.wholeMatch(of: /[-+]?0[xXoObB][0-9a-fA-F_]+/) != nil
            || text.wholeMatch(of: /[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?/) != nil  // sexagesimal
            || text.wholeMatch(of: /[-+]?[0-9._]*[0-9][0-9._]*([eE][-+]?[0-9]+)?/) != nil
                && (text.contains("_") || text.contains("e") || text.contains("E"))
        if ambiguousNumber {
            throw ParseError(line: line, message: "'\(text)' is read differently by YAML 1.1 and 1.2; quote it or write a plain decimal")
        }
        return plainValue(text)
    }

    /// YAML 1.2 core schema resolution of a plain scalar.
    static func plainValue(_ text: Substring) -> Any {
        switch text {
        case "null", "Null", "NULL", "~": return NSNull()
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: break
        }
        guard let first = text.first, first.isASCII && (first.isNumber || "+-.".contains(first)) else {
            return String(text)
        }
        if text.wholeMatch(of: /[-+]?[0-9]+/) != nil, let i = Int(text) { return i }
        if text.wholeMatch(of: /[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?/) != nil, let d = Double(text) {
            return d
        }
        return String(text)
    }

    /// Reads a quoted scalar at the start of `text`; returns it and the index after its closing quote.
    static func quoted(_ text: Substring, line: Int) throws -> (String, Substring.Index) {
        let q = text.first!
        var out = ""
        var i = text.index(after: text.startIndex)
        while i < text.endIndex {
            let c = text[i]
            if c == q {
                let next = text.index(after: i)
                if q == "'" && next < text.endIndex && text[next] == "'" {
                    out.append("'")
                    i = text.index(after: next)
                    continue
                }
                return (out, next)
            }
            if q == "\"" && c == "\\" {
                let (decoded, next) = try escape(text, at: text.index(after: i), line: line)
                out.append(decoded)
                i = next
                continue
            }
            out.append(c)
            i = text.index(after: i)
        }
        throw ParseError(line: line, message: "unterminated quoted scalar (multi-line scalars are not supported)")
    }

    private static func escape(_ text: Substring, at i: Substring.Index, line: Int) throws -> (String, Substring.Index) {
        guard i < text.endIndex else { throw ParseError(line: line, message: "unterminated escape sequence") }
        let simple: [Character: String] = [
            "\\": "\\", "\"": "\"", "/": "/", "n": "\n", "t": "\t", "r": "\r", "b": "\u{08}",
            "f": "\u{0C}", "0": "\0", " ": " ", "e": "\u{1B}", "a": "\u{07}", "v": "\u{0B}",
        ]
        if let s = simple[text[i]] { return (s, text.index(after: i)) }
        let width: Int
        switch text[i] {
        case "x": width = 2
        case "u": width = 4
        case "U": width = 8
        default: throw ParseError(line: line, message: "unsupported escape sequence \\\(text[i])")
        }
        let start = text.index(after: i)
        guard let end = text.index(start, offsetBy: width, limitedBy: text.endIndex),
              let code = UInt32(text[start..<end], radix: 16), let scalar = Unicode.Scalar(code)
        else { throw ParseError(line: line, message: "invalid \\\(text[i]) escape sequence") }
        return (String(Character(scalar)), end)
    }

    /// Flow sequences of scalars: `[a, 'b c', [d]]`.
    private struct FlowReader {
        let text: Substring
        let line: Int
        var i: Substring.Index

        init(text: Substring, line: Int) {
            self.text = text
            self.line = line
            i = text.startIndex
        }

        var atEnd: Bool { i == text.endIndex }

        mutating func skipSpaces() { while i < text.endIndex && text[i] == " " { i = text.index(after: i) } }

        mutating func readSequence() throws -> [Any] {
            i = text.index(after: i)  // [
            var items: [Any] = []
            skipSpaces()
            if i < text.endIndex && text[i] == "]" {
                i = text.index(after: i)
                return items
            }
            while true {
                skipSpaces()
                guard i < text.endIndex else { break }
                items.append(try readItem())
                skipSpaces()
                guard i < text.endIndex else { break }
                if text[i] == "]" {
                    i = text.index(after: i)
                    return items
                }
                guard text[i] == "," else { throw ParseError(line: line, message: "expected ',' or ']' in a flow sequence") }
                i = text.index(after: i)
            }
            throw ParseError(line: line, message: "unterminated flow sequence (multi-line flow collections are not supported)")
        }

        mutating func readItem() throws -> Any {
            switch text[i] {
            case "[":
                return try readSequence()
            case "{":
                throw ParseError(line: line, message: "flow mappings ({...}) are not supported")
            case "'", "\"":
                let (value, end) = try MiniYAML.quoted(text[i...], line: line)
                i = end
                return value
            default:
                let start = i
                while i < text.endIndex && !",[]{}".contains(text[i]) { i = text.index(after: i) }
                let plain = MiniYAML.trimTrailingSpaces(text[start..<i])
                if plain.isEmpty { throw ParseError(line: line, message: "empty item in a flow sequence") }
                if plain.contains(": ") || plain.hasSuffix(":") {
                    throw ParseError(line: line, message: "mappings inside flow sequences are not supported")
                }
                return try MiniYAML.scalar(plain, line: line)
            }
        }
    }
}
