import Crypto
import Foundation
import Testing
import TestSupport

/// A registration replica that loads an MDS3 BLOB from a file at start-up, for the metadata
/// stack tests: it runs on a scratch database with its own consumer group, so it cannot disturb
/// the stack's registration service, while its events reach the stack's other services like any
/// replica's. Its BLOB is signed by a fresh test PKI whose root it trusts.
struct MetadataReplica: @unchecked Sendable {
    // @unchecked: Process is not Sendable; one test owns the replica and stops it once.
    let base: String
    let chain: MetadataTestPKI.Chain
    let blobPath: String
    let logPath: String
    private let process: Process
    private let directory: String
    private let dropDatabase: @Sendable () async -> Void

    /// Starts the replica on `port` with the BLOB `firstBlob(chain)` and waits until it is ready.
    static func start(
        name: String, port: Int, firstBlob: (MetadataTestPKI.Chain) throws -> String
    ) async throws -> MetadataReplica {
        _ = try #require(TestStack.binDir, "SIGNET_BIN_DIR is not set")
        let scratch = try await TestStack.scratchDatabase(prefix: name.replacingOccurrences(of: "-", with: "_"))
        let dir = "\(TestStack.dataDir)/\(name)-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let chain = try MetadataTestPKI.Chain()
            try pem(chain.root.der).write(toFile: "\(dir)/root.pem", atomically: true, encoding: .utf8)
            try firstBlob(chain).write(toFile: "\(dir)/blob.jwt", atomically: true, encoding: .utf8)
            let (process, logPath) = try TestStack.launch(
                "signet-registration",
                environment: [
                    "SIGNET_HTTP_PORT": String(port), "SIGNET_DATABASE_URL": TestStack.conninfo(database: scratch.name),
                    "SIGNET_KAFKA_CONSUMER_GROUP": "signet-registration-\(name)", "SIGNET_MDS_BLOB_FILE": "\(dir)/blob.jwt",
                    "SIGNET_MDS_ROOT_FILE": "\(dir)/root.pem", "SIGNET_LOG_LEVEL": "warning",
                ],
                logName: name)
            let replica = MetadataReplica(
                base: "http://127.0.0.1:\(port)", chain: chain, blobPath: "\(dir)/blob.jwt", logPath: logPath, process: process,
                directory: dir, dropDatabase: scratch.drop)
            guard await TestStack.becomesReady(replica.base) else {
                await replica.stop()
                throw TestStackError("the replica did not become ready; see \(logPath)")
            }
            return replica
        } catch {
            try? FileManager.default.removeItem(atPath: dir)
            await scratch.drop()
            throw error
        }
    }

    static func pem(_ der: [UInt8]) -> String {
        let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----\n"
    }

    /// Replaces the BLOB file the replica reads on its next refresh.
    func writeBlob(_ text: String) throws {
        try text.write(toFile: blobPath, atomically: true, encoding: .utf8)
    }

    /// A new tenant (rp id `localhost`, one origin) and an API key for it, created through the
    /// replica: their events reach every service.
    func tenant(prefix: String, origin: String) async throws -> (id: String, key: String) {
        let id = "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
        let put = try await TestHTTP.json(
            "PUT", "\(base)/v1/admin/tenants/\(id)", token: TestStack.adminToken,
            json: #"{"displayName":"MDS","rpId":"localhost","origins":["\#(origin)"]}"#)
        try #require(put.status == 201, "\(put.text)")
        let issued = try await TestHTTP.json("POST", "\(base)/v1/admin/tenants/\(id)/api-keys", token: TestStack.adminToken, json: "{}")
        return (id, try #require(try issued.json()["apiKey"] as? String))
    }

    /// Stops the replica and removes its database and files.
    func stop() async {
        process.terminate()
        for _ in 0..<500 where process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        try? FileManager.default.removeItem(atPath: directory)
        await dropDatabase()
    }
}
