// swift-tools-version:6.0
import PackageDescription

// Signet: five services, shared libraries, C system libraries found by pkg-config.
// Settings common to every Swift target are applied once, by the loop at the end.

let package = Package(
    name: "Signet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "signet-registration", targets: ["Registration"]),
        .executable(name: "signet-authentication", targets: ["Authentication"]),
        .executable(name: "signet-transaction", targets: ["Transaction"]),
        .executable(name: "signet-oob", targets: ["OOB"]),
        .executable(name: "signet-pii", targets: ["PII"]),
        .executable(name: "signet-console", targets: ["Console"]),
        .executable(name: "signet-devbroker", targets: ["DevBroker"]),
        .executable(name: "signet-bench", targets: ["Bench"]),
    ],
    targets: [
        // MARK: - C system libraries
        .systemLibrary(
            name: "CMicroHTTPD", path: "Shared/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CRDKafka", path: "Shared/CRDKafka", pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CQREncode", path: "Shared/CQREncode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Shared/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Shared/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        // curl_easy_setopt and curl_easy_getinfo are variadic; this header exposes only void
        // pointers and plain C types.
        .target(name: "CCurlShims", path: "Shared/CCurlShims", linkerSettings: [.linkedLibrary("curl")]),
        // Variadic and macro-only C calls (MHD_start_daemon, rd_kafka_producev, the mock
        // cluster's TCP relay). Its header exposes only void pointers so that no C type is
        // declared by two Clang modules.
        .target(
            name: "CSignetShims", path: "Shared/CSignetShims",
            linkerSettings: [
                .linkedLibrary("microhttpd"), .linkedLibrary("rdkafka"), .linkedLibrary("pthread"),
            ]),

        // jemalloc, the allocator of the service executables (and signet-bench, which serves the
        // same HTTP layer): linked only by them, never by the libraries, tests or fuzzers.
        .target(name: "CAllocator", path: "Shared/CAllocator", linkerSettings: [.linkedLibrary("jemalloc")]),

        // OpenSSL's low-level ECDSA verify for ES256 (deprecated API, kept out of Swift).
        .target(name: "CCryptoShims", path: "Shared/CCryptoShims", linkerSettings: [.linkedLibrary("crypto")]),

        // MARK: - Shared libraries
        .target(name: "Platform", dependencies: ["CSignetShims", "JSON"], path: "Shared/Platform"),
        // Strict JSON: parser, writer, value tree and Codable over it. No dependencies.
        .target(name: "JSON", path: "Shared/JSON"),
        // Strict parsers of identity documents' machine-readable text (ICAO 9303 MRZ, AAMVA
        // PDF417). No dependencies.
        .target(name: "IdentityDocuments", path: "Shared/IdentityDocuments"),
        .target(name: "Crypto", dependencies: ["COpenSSL", "CCryptoShims", "Platform"], path: "Shared/Crypto"),
        .target(
            name: "HTTPServer", dependencies: ["Platform", "JSON", "CMicroHTTPD", "CSignetShims"],
            path: "Shared/HTTPServer"),
        .target(name: "Postgres", dependencies: ["Platform", "JSON", "CLibPQ"], path: "Shared/Postgres"),
        .target(
            name: "Kafka", dependencies: ["Platform", "CRDKafka", "CSignetShims"],
            path: "Shared/Kafka"),
        .target(name: "Schema", dependencies: ["JSON", "Platform"], path: "Shared/Schema"),
        .target(name: "Tokens", dependencies: ["Crypto", "JSON", "Platform"], path: "Shared/Tokens"),
        // FIDO reads the Schema types that carry UAF structures (UAFDisplayPNGCharacteristics).
        .target(name: "FIDO", dependencies: ["Crypto", "Tokens", "JSON", "Platform", "Schema", "COpenSSL", "CZlib"], path: "Shared/FIDO"),
        .target(name: "Rules", dependencies: ["JSON", "Platform"], path: "Shared/Rules"),
        .target(name: "OTP", dependencies: ["Crypto", "Platform"], path: "Shared/OTP"),
        .target(name: "QRCode", dependencies: ["Platform", "CQREncode", "CZlib"], path: "Shared/QRCode"),
        .target(name: "Delivery", dependencies: ["Platform", "CCurl", "CCurlShims"], path: "Shared/Delivery"),
        .target(
            name: "ServiceKit",
            dependencies: ["Platform", "JSON", "HTTPServer", "Postgres", "Kafka", "Schema", "Crypto", "Tokens", "Delivery"],
            path: "Shared/ServiceKit"),
        // FIDO refusals as problem codes that more than one service answers with (a refused
        // transaction image).
        .target(name: "FIDOProblems", dependencies: ["FIDO", "HTTPServer"], path: "Shared/FIDOProblems"),

        // MARK: - Services
        // Each service is a library (its routes, stores, consumers, assembly) and an executable
        // whose main.swift only runs it; tests assemble the library in process.
        .target(
            name: "RegistrationService", dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Schema", "Platform", "JSON", "FIDO", "Crypto", "Tokens", "OTP", "QRCode", "CZlib", "Delivery"],
            path: "Services/Registration", exclude: ["main"]),
        .target(
            name: "AuthenticationService",
            dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Schema", "Platform", "FIDO", "FIDOProblems", "Tokens", "JSON", "Crypto", "Rules", "OTP", "Delivery"],
            path: "Services/Authentication", exclude: ["main"]),
        .target(
            name: "TransactionService", dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Schema", "Platform", "FIDO", "FIDOProblems", "Tokens", "JSON", "Crypto"],
            path: "Services/Transaction", exclude: ["main"]),
        .target(
            name: "OOBService", dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Schema", "Platform", "JSON", "Delivery", "Crypto", "Tokens", "QRCode", "IdentityDocuments"],
            path: "Services/OOB", exclude: ["main"]),
        .target(name: "PIIService", dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Schema", "Platform", "JSON", "Crypto"], path: "Services/PII", exclude: ["main"]),
        .executableTarget(name: "Registration", dependencies: ["RegistrationService", "ServiceKit", "CAllocator"], path: "Services/Registration/main"),
        .executableTarget(name: "Authentication", dependencies: ["AuthenticationService", "ServiceKit", "CAllocator"], path: "Services/Authentication/main"),
        .executableTarget(name: "Transaction", dependencies: ["TransactionService", "ServiceKit", "CAllocator"], path: "Services/Transaction/main"),
        .executableTarget(name: "OOB", dependencies: ["OOBService", "ServiceKit", "CAllocator"], path: "Services/OOB/main"),
        .executableTarget(name: "PII", dependencies: ["PIIService", "ServiceKit", "CAllocator"], path: "Services/PII/main"),
        // The admin console's backend-for-frontend (not one of the five services: no database).
        .target(
            name: "ConsoleService", dependencies: ["ServiceKit", "HTTPServer", "Schema", "Platform", "JSON", "Crypto", "Kafka", "Delivery", "Tokens"],
            path: "Services/Console", exclude: ["main", "Assets"]),
        .executableTarget(name: "Console", dependencies: ["ConsoleService", "CAllocator"], path: "Services/Console/main"),

        // MARK: - Tools
        .executableTarget(
            name: "DevBroker", dependencies: ["Platform", "Kafka", "Schema", "CRDKafka", "CSignetShims"],
            path: "Tools/DevBroker"),

        .executableTarget(
            name: "Bench", dependencies: ["CAllocator", "FIDO", "Crypto", "COpenSSL", "Schema", "TestSupport", "TestRandom", "Rules", "Tokens", "JSON", "Platform", "HTTPServer", "ServiceKit"], path: "Tools/Bench"),

        // MARK: - Tests
        // SplitMix64, the seeded generator of fuzz tests and benchmark workloads. No dependencies.
        .target(name: "TestRandom", path: "Tests/TestRandom"),
        // Test only: the fork probe of the random buffer (it forks; kept out of CCryptoShims).
        .target(name: "CRandomProbe", dependencies: ["CCryptoShims"], path: "Tests/CRandomProbe"),
        .target(name: "TestSupport", dependencies: ["Postgres", "Kafka", "Platform", "FIDO", "Crypto", "Schema", "Tokens", "JSON"], path: "Tests/TestSupport"),
        .testTarget(name: "PlatformTests", dependencies: ["Platform", "JSON"], path: "Tests/PlatformTests"),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestRandom", "CRandomProbe"], path: "Tests/CryptoTests"),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestRandom"], path: "Tests/JSONTests"),
        .testTarget(name: "IdentityDocumentsTests", dependencies: ["IdentityDocuments", "TestRandom"], path: "Tests/IdentityDocumentsTests"),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "Platform", "JSON"], path: "Tests/HTTPServerTests"),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "Platform", "TestSupport", "HTTPServer", "ServiceKit"], path: "Tests/PostgresTests"),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "Platform", "Schema", "TestSupport"], path: "Tests/KafkaTests"),
        .testTarget(name: "TokensTests", dependencies: ["Tokens", "Crypto", "JSON"], path: "Tests/TokensTests"),
        .testTarget(name: "RulesTests", dependencies: ["Rules", "JSON", "TestRandom"], path: "Tests/RulesTests"),
        .testTarget(name: "OTPTests", dependencies: ["OTP"], path: "Tests/OTPTests"),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode", "CZlib"], path: "Tests/QRCodeTests"),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "CCurl", "TestRandom"], path: "Tests/DeliveryTests"),
        .testTarget(name: "FIDOTests", dependencies: ["FIDO", "Crypto", "Tokens", "JSON", "Platform", "Schema", "TestSupport", "TestRandom"], path: "Tests/FIDOTests"),
        .testTarget(name: "SchemaTests", dependencies: ["Schema", "HTTPServer", "JSON", "TestRandom"], path: "Tests/SchemaTests"),
        .testTarget(
            name: "ServiceKitTests", dependencies: ["ServiceKit", "HTTPServer", "Schema", "Kafka", "Platform", "Postgres", "Tokens", "JSON", "Crypto", "TestSupport"],
            path: "Tests/ServiceKitTests"),
        // Services assembled in process (ServiceHarness): routes and guards, stores against a
        // scratch database, consumers fed directly. No broker, no other service.
        .target(
            name: "ServiceTestSupport", dependencies: ["ServiceKit", "HTTPServer", "Postgres", "Kafka", "Platform", "Schema", "Crypto", "TestSupport"],
            path: "Tests/ServiceTestSupport"),
        .testTarget(
            name: "RegistrationServiceTests",
            dependencies: ["RegistrationService", "ServiceTestSupport", "ServiceKit", "HTTPServer", "Schema", "Crypto", "TestSupport", "FIDO", "JSON", "Tokens", "Postgres", "Platform"],
            path: "Tests/RegistrationServiceTests"),
        .testTarget(
            name: "AuthenticationServiceTests",
            dependencies: ["AuthenticationService", "ServiceTestSupport", "ServiceKit", "HTTPServer", "Schema", "TestSupport", "FIDO", "JSON", "Crypto", "Postgres", "Rules"],
            path: "Tests/AuthenticationServiceTests"),
        .testTarget(
            name: "TransactionServiceTests", dependencies: ["TransactionService", "ServiceTestSupport", "ServiceKit", "HTTPServer", "Schema", "TestSupport", "Postgres", "Crypto", "FIDO", "JSON", "Tokens"],
            path: "Tests/TransactionServiceTests"),
        .testTarget(
            name: "OOBServiceTests", dependencies: ["OOBService", "ServiceTestSupport", "ServiceKit", "HTTPServer", "Schema", "TestSupport", "Crypto", "Tokens", "JSON", "Postgres"],
            path: "Tests/OOBServiceTests"),
        .testTarget(
            name: "ConsoleServiceTests", dependencies: ["ConsoleService", "ServiceKit", "HTTPServer", "Schema", "Platform", "JSON", "Kafka"],
            path: "Tests/ConsoleServiceTests"),
        .testTarget(
            name: "PIIServiceTests", dependencies: ["PIIService", "ServiceTestSupport", "ServiceKit", "HTTPServer", "Schema", "TestSupport", "Postgres", "Crypto"],
            path: "Tests/PIIServiceTests"),
        .testTarget(
            name: "StackTests",
            dependencies: ["Postgres", "Kafka", "Schema", "Platform", "Crypto", "ServiceKit", "HTTPServer", "OTP", "TestSupport", "Tokens", "FIDO", "JSON"],
            path: "Tests/StackTests"),
    ]
)

// MARK: - Fuzz targets
// libFuzzer targets (Tools/Fuzz, issue 21), declared only when SIGNET_FUZZ=1 so that the normal
// build never sees them: `scripts/fuzz.sh` builds them in .build/fuzz with
// `-sanitize=fuzzer,address`, where libFuzzer supplies `main`.
if Context.environment["SIGNET_FUZZ"] == "1" {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("JSONFuzz", ["JSON"]),
        ("HTTPBodyFuzz", ["JSON", "Schema"]),
        ("CBORFuzz", ["FIDO"]),
        ("COSEKeyFuzz", ["FIDO"]),
        ("AuthenticatorDataFuzz", ["FIDO"]),
        ("AttestationFuzz", ["FIDO"]),
        ("TPMFuzz", ["FIDO"]),
        ("MDSFuzz", ["FIDO", "JSON"]),
        ("UAFFuzz", ["FIDO"]),
        ("UAFPNGFuzz", ["FIDO", "Schema"]),
        ("X509Fuzz", ["Crypto"]),
        ("JWSFuzz", ["Tokens", "Crypto", "JSON"]),
        ("JWKSFuzz", ["Tokens"]),
        ("RulesFuzz", ["Rules", "JSON"]),
        ("EventFuzz", ["Kafka", "Schema", "ServiceKit"]),
        ("MRZFuzz", ["IdentityDocuments"]),
        ("AAMVAFuzz", ["IdentityDocuments"]),
    ]
    package.targets.append(.target(name: "CFuzzSupport", path: "Tools/Fuzz/CFuzzSupport"))
    package.targets.append(
        .target(name: "FuzzSupport", dependencies: ["JSON", "CFuzzSupport"], path: "Tools/Fuzz/FuzzSupport"))
    for (name, dependencies) in fuzzTargets {
        package.targets.append(
            .executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies, path: "Tools/Fuzz/\(name)"))
        package.products.append(.executable(name: "fuzz-\(name)", targets: [name]))
    }
}

for target in package.targets where target.type != .system && !["CSignetShims", "CCryptoShims", "CCurlShims", "CFuzzSupport", "CRandomProbe", "CAllocator"].contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
