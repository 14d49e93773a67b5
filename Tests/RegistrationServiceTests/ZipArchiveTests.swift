import Foundation
import Testing
import TestSupport
@testable import RegistrationService

/// The ZIP writer of the user-data download, read back by Python's `zipfile` (CRC-32 checked).
@Suite struct ZipArchiveTests {
    struct Listing {
        var names: [String]
        var contents: [String: String]
    }

    /// Names and UTF-8 contents of the archive, as `zipfile` reads them after `testzip()`
    /// (which checks every entry's CRC).
    static func readWithPython(_ bytes: [UInt8]) throws -> Listing {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("signet-zip-\(UUID().uuidString).zip").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            """
            import json, sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None, "bad CRC"
            print(json.dumps({i.filename: z.read(i).decode("utf-8") for i in z.infolist()}))
            """, path,
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let object = try JSONSerialization.jsonObject(with: data) as? [String: String] else {
            throw TestStackError("python3 could not read the archive (status \(process.terminationStatus))")
        }
        return Listing(names: object.keys.sorted(), contents: object)
    }

    @Test func pythonReadsWhatItWrites() throws {
        var archive = ZipArchive(modified: Date(timeIntervalSince1970: 1_764_000_000))
        archive.add("manifest.json", Array(#"{"a":1}"#.utf8))
        archive.add("pii.json", Array(#"{"values":[{"value":"jose@example.com","note":"é"}]}"#.utf8))
        archive.add("empty.json", [])
        let listing = try Self.readWithPython(archive.bytes)
        #expect(listing.names == ["empty.json", "manifest.json", "pii.json"])
        #expect(listing.contents["pii.json"] == #"{"values":[{"value":"jose@example.com","note":"é"}]}"#)
        #expect(listing.contents["empty.json"] == "")
    }

    @Test func aCorruptedEntryIsCaught() throws {
        var archive = ZipArchive()
        archive.add("a.json", Array("hello".utf8))
        var bytes = archive.bytes
        // The first byte of the entry's data: the CRC no longer matches.
        bytes[30 + "a.json".utf8.count] ^= 0xFF
        #expect(throws: TestStackError.self) { try Self.readWithPython(bytes) }
    }

    @Test func theAcceptHeaderChoosesTheZip() {
        #expect(UserDataRoutes.wantsZip("application/zip"))
        #expect(UserDataRoutes.wantsZip("application/json;q=0.5, application/zip") == false)
        #expect(UserDataRoutes.wantsZip("text/html, application/zip;q=0.9"))
        #expect(UserDataRoutes.wantsZip(nil) == false)
        #expect(UserDataRoutes.wantsZip("*/*") == false)
    }
}
