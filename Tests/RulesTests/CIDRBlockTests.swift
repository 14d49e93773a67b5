import Rules
import Testing
import JSON

/// IP address parsing and CIDR matching: IPv4, IPv6 with `::` compression, IPv4-mapped
/// addresses, prefix edge cases, malformed text.
@Suite struct CIDRBlockTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"),
        ("0.0.0.0", "0.0.0.0"),
        ("255.255.255.255", "255.255.255.255"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("::", "::"),
        ("::1", "::1"),
        ("1::", "1::"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
        ("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"),
        ("fe80::1:0:0:1", "fe80::1:0:0:1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("::ffff:c000:201", "192.0.2.1"),
        ("0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1"),
        ("64:ff9b::192.0.2.1", "64:ff9b::c000:201"),
    ])
    func parsesAddresses(text: String, canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.-4", "01.2.3.4", "1.2.3.04", "1..2.3", "1.2.3.4 ",
        " 1.2.3.4", "1.2.3.4/32", "0x1.2.3.4", "1:2:3:4:5:6:7:8:9", "1::2::3", ":::", ":1::", "1::2:", "1:2",
        "12345::", "g::1", "fe80::1%eth0", "[::1]", "::ffff:1.2.3", "::ffff:1.2.3.4.5", "1.2.3.4::",
        "1:2:3:4:5:6:7:1.2.3.4", "::ffff:256.1.1.1", "2001:db8::1:", "localhost",
    ])
    func refusesMalformedAddresses(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test(arguments: [
        // IPv4 prefixes at the edges.
        ("0.0.0.0/0", "203.0.113.9", true),
        ("0.0.0.0/0", "::ffff:203.0.113.9", true),
        ("0.0.0.0/0", "2001:db8::1", false),
        ("203.0.113.9/32", "203.0.113.9", true),
        ("203.0.113.9/32", "203.0.113.8", false),
        ("203.0.113.0/24", "203.0.113.255", true),
        ("203.0.113.0/24", "203.0.114.0", false),
        ("10.0.0.0/8", "10.255.255.255", true),
        ("128.0.0.0/1", "127.255.255.255", false),
        ("128.0.0.0/1", "128.0.0.0", true),
        // IPv4-mapped IPv6 addresses match IPv4 blocks, written either way.
        ("10.0.0.0/8", "::ffff:10.1.2.3", true),
        ("10.0.0.0/8", "::ffff:a01:203", true),
        ("10.0.0.0/8", "::ffff:11.1.2.3", false),
        ("10.0.0.0/8", "::10.1.2.3", false),
        ("::ffff:10.0.0.0/104", "10.20.30.40", true),
        ("::ffff:0:0/96", "192.0.2.1", true),
        // IPv6 prefixes at the edges.
        ("::/0", "2001:db8::1", true),
        ("::/0", "192.0.2.1", true),
        ("2001:db8::1/128", "2001:db8::1", true),
        ("2001:db8::1/128", "2001:db8::2", false),
        ("2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true),
        ("2001:db8::/32", "2001:db9::", false),
        ("2001:db8::/64", "2001:db8::ffff:ffff:ffff:ffff", true),
        ("2001:db8::/64", "2001:db8:0:1::", false),
        ("2001:db8::/65", "2001:db8::7fff:ffff:ffff:ffff", true),
        ("2001:db8::/65", "2001:db8::8000:0:0:0", false),
        ("fe80::/10", "febf::1", true),
        ("fe80::/10", "fec0::1", false),
    ])
    func matchesBlocks(block text: String, address: String, inside: Bool) throws {
        let block = try #require(CIDRBlock(text))
        let parsed = try #require(IPAddress(address))
        #expect(block.contains(parsed) == inside)
        // The same through a rule.
        let compiled = try RulesTestSupport.single(fact: "signals.ip", op: "inCidr", value: .string(text))
        #expect(RulesTestSupport.hits(compiled, ["signals": ["ip": .string(address)]]) == inside)
    }

    @Test(arguments: [
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("2001:DB8::/32", "2001:db8::/32"),
        ("::ffff:0:0/96", "::ffff:0.0.0.0/96"),
        ("0.0.0.0/0", "0.0.0.0/0"),
        ("::/0", "::/0"),
    ])
    func describesBlocks(text: String, canonical: String) throws {
        #expect(try #require(CIDRBlock(text)).description == canonical)
    }

    @Test(arguments: [
        "10.0.0.0", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/08", "10.0.0.0/8/8", "10.0.0.1/8",
        "192.168.1.1/16", "2001:db8::/129", "2001:db8::1/64", "::1/0", "/8", "10.0.0/8", "10.0.0.0/ 8",
        "10.0.0.0/1e1", "fe80::%eth0/64",
    ])
    func refusesMalformedBlocks(text: String) throws {
        #expect(CIDRBlock(text) == nil)
        let error = try #require(try RulesTestSupport.error(
            #"{"rules": [{"name": "r", "when": {"fact": "signals.ip", "op": "inCidr", "value": ["10.0.0.0/8", \#(JSONValue.string(text).jsonString)]}, "action": "DENY"}]}"#
        ))
        #expect(error.code == .invalidCIDR)
        #expect(error.path == "rules[0].when.value[1]")
    }

    @Test func unparsableFactsNeverMatchEvenTheWholeSpace() throws {
        let compiled = try RulesTestSupport.single(fact: "signals.ip", op: "inCidr", value: ["0.0.0.0/0", "::/0"])
        for ip: JSONValue in ["", "1.2.3", "::1%lo", "[::1]", "example.com", 12, .null, ["10.0.0.1"]] {
            #expect(!RulesTestSupport.hits(compiled, ["signals": ["ip": ip]]), "\(ip.jsonString)")
        }
        #expect(RulesTestSupport.hits(compiled, ["signals": ["ip": "::"]]))
    }
}
