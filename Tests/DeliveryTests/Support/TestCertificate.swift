import Foundation

/// A throw-away self-signed certificate for 127.0.0.1 and localhost, made by the `openssl`
/// command at test time (so no private key is kept in the repository), valid for one day.
struct TestCertificate {
    /// The PEM certificate; also the CA bundle a client trusts to verify it.
    let certificate: URL
    /// The PEM private key.
    let key: URL

    /// Makes a certificate and key in a fresh temporary directory.
    ///
    /// - Returns: The files, or nil when no `openssl` command is on `PATH` (Debian: `openssl`).
    /// - Throws: ``SinkUnavailable`` when `openssl` runs and fails.
    static func make() throws -> TestCertificate? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let openssl = path.split(separator: ":").map({ "\($0)/openssl" }).first(where: FileManager.default.isExecutableFile(atPath:)) else {
            return nil
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-delivery-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("cert.pem")
        let key = directory.appendingPathComponent("key.pem")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", key.path, "-out", certificate.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SinkUnavailable(reason: "openssl req failed with status \(process.terminationStatus)")
        }
        return TestCertificate(certificate: certificate, key: key)
    }

    /// Removes the files.
    func remove() {
        try? FileManager.default.removeItem(at: certificate.deletingLastPathComponent())
    }
}
