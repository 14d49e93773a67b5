import Crypto
import FIDO
import Foundation
import Testing

/// A 2048-bit RSA key generated for these tests only (openssl genpkey), so that RSA UAF
/// registrations do not generate a key per test.
enum UAFTestKeys {
    static let rsa2048PEM = """
-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDtGgg6XNScYSbv
rg3UaDNsbpk/Gr4drjt0Q/3UT6j60DcM2bWJCYXUcWx2w3UDXSnoRPmU+zdJaYvv
Mprx10RAVrV9mbvMqFelEBhQLLBGOpFBVVjff5eah9Ww7D9RxD3BNpOfpjgY280H
ZxVFLQIxWkakzYKxlZvUGVkXtufzRoBE1CUd0WC+ckaKAmBi7gNum2pzH1ZdsBxT
dveLthvadpe+zWctLQN+Uus7WY0ZQaVBNAdvRmg3KylTYh9pkRoQUJ05049sZ7WG
FCpjyPdvWHEzhg8biEil5tINIGLFFU7Vx8IuF/nx2xjh68LOOR0nFHzDX7udizSC
XBqDKqabAgMBAAECggEAY5lN34ZjYZWGD6Tj9lgXUfNbuKB5QGqSWxK8q9USvNl+
Zo2Frp0rdMR4taMBonoeQo3G8ghdfx8xQzfU0saEyyohbzOHKj+FIbeTHwrGuZmc
rv81KB2nB6kL4Rg8uRJghqtwc94VLowWoodw7fAsPaMYjd4uin64SO6k+EtDQHOM
CKZtjq0tz2q752Cg0Yqvl/ak+sPBzfzLtDJvR4zEu2t0LvyPOCX/ncIDfV0S/aKL
sX29kZi8NEu+WqzVNpJ0hNKNmbyweB9leBIR2ci1U0ut1NU3+j9LOyFLNkiTFq8T
NPUZxWVzRSQpGJPtY70MUVxE9icdzNcKybEGpJJgEQKBgQD/v3FUlKwnA1wdZUph
rY9dV9unkMZh+gbBfHgkQTBIdvPykW42akLM90tkHyOpXm0MN2ty3B/LQ7VJgXEF
ijZ8p4Jq/1IcY6MF0nhPoQiY/NY7u8cpo3oPQ4XhaPsB7gXjXSJfVS9oqcobVq7I
rddT3py2+S9AhjDgtzzxqsWrFwKBgQDtVeH3aeTkEDkAOh61lHmDHmjAZcWd6VZu
AUklvFdnHCrGHClwzlKa69CYumrj6MDClefCWbL5JlhCqfuEVRTrHjyNWwMX5aNc
2lo97RM2VOQ1kxfqvLUIlFipJ6KVy5Cx3S7yrcTCp0Y3Inw/VRWXFWSAkIQ/BTsM
k0YjO4MDHQKBgQCpeY67Uu4lyDcxj57TzbS0UXVQvEKKSKpTa40d0UkSrCkKNE9J
pe7wbmu6RFxYbydqMgt1COPUyeCHfkyMNEPZJRPqnZknEOvF/uwVMIxG/T1mRhA7
yoYnOUKt1eiIJdgnC9+sNwH8pI82wKGAgJqxjFJjegtTAdnAAA1VxCnLLwKBgApU
88pWhM1c225kGVQkS4nmt/6wL4MpVkbhrXKEGXX2pvIK5c7wXG48F8+eRer4BfQy
nG08hGsOPUdhqP5gydFWdqJctOzEZXE0XDtX5780wN6IMcFZR7RA6P8sJ4rH2tuz
WkjcQbWLnKXnzWrgZFk4aDCkme04aBKrEqGUBKcNAoGBAKOpM9nTGLW9gdDL7pTA
Ie02SVFlgGSxhCnAzMgmonB4T+HRoREqXr1SQMynBDtVE4eU2sZhdmytE6Wl5ecx
yfIowtu+g2UFgBs1dzNk/x3GEF2YaQq8C1kSCItJVtgTwiflIC4Jm29BSTHrQltE
W4xtlnIeurC2m0F/2iH3Rdoy
-----END PRIVATE KEY-----
"""

    /// An Ed25519 key generated for these tests only (openssl genpkey -algorithm ED25519).
    static let ed25519PEM = """
-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIGI/p0J8kn6b2J/0391vuue2l5RS7DRhOzFAvDImHRf7
-----END PRIVATE KEY-----
"""
}
