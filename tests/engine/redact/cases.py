"""The labelled table behind the precision/recall test: each string with the (rule, value) pairs a
correct detector reports. Look-alikes (expected = empty) are values that resemble PII but are not."""

from __future__ import annotations

Case = tuple[str, frozenset[tuple[str, str]]]


def _c(text: str, *expected: tuple[str, str]) -> Case:
    return text, frozenset(expected)


CASES: list[Case] = [
    # --- email ----------------------------------------------------------------------------------
    _c("Write to alice@example.com today.", ("email", "alice@example.com")),
    _c("Contact: Bob.Smith+news@mail.co.uk", ("email", "Bob.Smith+news@mail.co.uk")),
    _c("<ops-team_2@sub.example-corp.io>", ("email", "ops-team_2@sub.example-corp.io")),
    _c("cc j.doe@uni.edu, m_li@uni.edu", ("email", "j.doe@uni.edu"), ("email", "m_li@uni.edu")),
    # --- phone ----------------------------------------------------------------------------------
    _c("Call me at (212) 736-5000 after six", ("phone", "(212) 736-5000")),
    _c("office 212.736.5000", ("phone", "212.736.5000")),
    _c("mobile: +1 650 253 0000", ("phone", "+1 650 253 0000")),
    _c("Toll free 1-800-555-0199.", ("phone", "1-800-555-0199")),
    _c("London office +44 20 7946 0958", ("phone", "+44 20 7946 0958")),
    _c("Berlin: +49 30 901820", ("phone", "+49 30 901820")),
    _c("Paris +33 1 42 68 53 00 (reception)", ("phone", "+33 1 42 68 53 00")),
    _c("Tokyo +81 3-1234-5678", ("phone", "+81 3-1234-5678")),
    _c("whatsapp +91 98765 43210", ("phone", "+91 98765 43210")),
    _c("text 4155550132 when you land", ("phone", "4155550132")),
    # --- card -----------------------------------------------------------------------------------
    _c("Visa 4111 1111 1111 1111 exp 12/27", ("card", "4111 1111 1111 1111")),
    _c("card=4012888888881881", ("card", "4012888888881881")),
    _c("MC 5555-5555-5555-4444", ("card", "5555-5555-5555-4444")),
    _c("Amex 3782 822463 10005", ("card", "3782 822463 10005")),
    _c("new Mastercard 2223 0031 2200 3222", ("card", "2223 0031 2200 3222")),
    _c("Discover 6011111111111117.", ("card", "6011111111111117")),
    _c("Diners 30569309025904", ("card", "30569309025904")),
    _c("JCB 3530 1113 3330 0000", ("card", "3530 1113 3330 0000")),
    # --- iban -----------------------------------------------------------------------------------
    _c("IBAN DE89 3704 0044 0532 0130 00 please", ("iban", "DE89 3704 0044 0532 0130 00")),
    _c("pay to GB82WEST12345698765432", ("iban", "GB82WEST12345698765432")),
    _c("FR14 2004 1010 0505 0001 3M02 606", ("iban", "FR14 2004 1010 0505 0001 3M02 606")),
    _c("NL91ABNA0417164300 (ABN AMRO)", ("iban", "NL91ABNA0417164300")),
    _c("Konto: CH9300762011623852957.", ("iban", "CH9300762011623852957")),
    _c("ES91 2100 0418 4502 0005 1332 is mine", ("iban", "ES91 2100 0418 4502 0005 1332")),
    # --- us_ssn ---------------------------------------------------------------------------------
    _c("SSN 123-45-6789", ("us_ssn", "123-45-6789")),
    _c("her social security number is 078-05-1120", ("us_ssn", "078-05-1120")),
    _c("ssn: 219099999 on file", ("us_ssn", "219099999")),
    _c("id 536 22 5555", ("us_ssn", "536 22 5555")),
    # --- ipv4 / ipv6 ----------------------------------------------------------------------------
    _c("ssh into 192.168.1.10 now", ("ipv4", "192.168.1.10")),
    _c("DNS 8.8.8.8 and 1.1.1.1.", ("ipv4", "8.8.8.8"), ("ipv4", "1.1.1.1")),
    _c("broadcast=255.255.255.255", ("ipv4", "255.255.255.255")),
    _c("client ip: 172.16.254.1, port 22", ("ipv4", "172.16.254.1")),
    _c("IPv6 2001:db8::1 is the gateway", ("ipv6", "2001:db8::1")),
    _c("full 2001:0db8:85a3:0000:0000:8a2e:0370:7334", ("ipv6", "2001:0db8:85a3:0000:0000:8a2e:0370:7334")),
    _c("localhost is ::1 here", ("ipv6", "::1")),
    _c(
        "mapped ::ffff:192.0.2.128 and fe80::1ff:fe23:4567:890a",
        ("ipv6", "::ffff:192.0.2.128"),
        ("ipv6", "fe80::1ff:fe23:4567:890a"),
    ),
    # --- secret ---------------------------------------------------------------------------------
    _c(
        "OPENAI_API_KEY sk-proj-4fGh7Jk2LmN9pQ3rS8tV1wX6yZ0aB5cD",
        ("secret", "sk-proj-4fGh7Jk2LmN9pQ3rS8tV1wX6yZ0aB5cD"),
    ),
    _c(
        "token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        ("secret", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ),
    _c("aws AKIAIOSFODNN7EXAMPLE", ("secret", "AKIAIOSFODNN7EXAMPLE")),
    _c(
        "slack xoxb-1234567890-0987654321-AbCdEfGhIjKl", ("secret", "xoxb-1234567890-0987654321-AbCdEfGhIjKl")
    ),
    _c(
        "Authorization: Bearer 9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a",
        ("secret", "9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a"),
    ),
    _c("api_key = 'Zq3xW9vT2pL7mK4nR8sD1fG6'", ("secret", "Zq3xW9vT2pL7mK4nR8sD1fG6")),
    _c("stripe sk_live_51HxYz2AbCdEf3GhIjKl4MnOp", ("secret", "sk_live_51HxYz2AbCdEf3GhIjKl4MnOp")),
    _c(
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ("secret", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
    ),
    _c("client_secret: 7Hq2Lz9Xw4Pv6Nt1Ks8Rm3Bj", ("secret", "7Hq2Lz9Xw4Pv6Nt1Ks8Rm3Bj")),
    # --- several in one string ------------------------------------------------------------------
    _c(
        "Reach Dana at dana@corp.com or (917) 555-0143; server 10.0.0.7",
        ("email", "dana@corp.com"),
        ("phone", "(917) 555-0143"),
        ("ipv4", "10.0.0.7"),
    ),
    _c(
        "refund 4111111111111111 to DE89370400440532013000",
        ("card", "4111111111111111"),
        ("iban", "DE89370400440532013000"),
    ),
    # --- look-alikes: nothing to redact ---------------------------------------------------------
    _c("order #4111-2222 shipped"),
    _c("Order number 2125551234 is on its way"),
    _c("release v2.10.3 is out"),
    _c("Python 3.11.4 and numpy 1.26.4"),
    _c("meeting on 2024-05-01 at 10:30"),
    _c("born 05/01/1990, moved 01.05.2024"),
    _c("the run took 12:34:56"),
    _c("price $1,299.99 or EUR 12.50"),
    _c("ISBN 978-3-16-148410-0"),
    _c("ISBN 0-306-40615-2"),
    _c("UPS tracking 1Z999AA10123456784"),
    _c("USPS 9400 1000 0000 0000 0000 00"),
    _c("card 4111 1111 1111 1112 was declined"),  # fails Luhn
    _c("number 1234 5678 9012 3456"),  # fails Luhn
    _c("IBAN DE89 3704 0044 0532 0130 01"),  # bad checksum
    _c("GB82WEST12345698765433"),  # bad checksum
    _c("SSN 666-12-3456"),  # area 666 never issued
    _c("000-12-3456 and 123-00-4567 and 123-45-0000 and 912-34-5678"),
    _c("zip 94107-1234, ext. 5567"),
    _c("room 101, floor 3"),
    _c("address 999.1.1.1 or 256.10.10.10"),
    _c("version 1.2.3.4.5 of the schema"),
    _c("MAC 00:1A:2B:3C:4D:5E"),
    _c("std::vector<int> and Foo::bar()"),
    _c("ratio 16:9, score 3:2"),
    _c("id 123e4567-e89b-12d3-a456-426614174000"),
    _c("commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"),
    _c("we use scikit-learn and sk-learn style"),
    _c("the token limit is 4096"),
    _c("password: correcthorsebatterystaple"),
    _c("the secret is to keep going"),
    _c("user@localhost cannot receive mail"),
    _c("retina icon@2x.png"),
    _c("at coordinates 40.7128, -74.0060"),
    _c("timestamp 1700000000000 ms"),
    _c("call 555-0100 (fictional)"),
    _c("Bearer of bad news"),
    # --- harder cases, written before measuring (kept even where the detectors miss) ---------------
    _c("Email: JOHN.DOE@EXAMPLE.ORG", ("email", "JOHN.DOE@EXAMPLE.ORG")),
    _c("mailto:support@help.example.com?subject=hi", ("email", "support@help.example.com")),
    _c("reach me on 917-555-0143 or 917 555 0143", ("phone", "917-555-0143"), ("phone", "917 555 0143")),
    _c("UK mobile 07700 900123", ("phone", "07700 900123")),  # national form after a telephone word
    _c("+1-212-736-5000 is the front desk", ("phone", "+1-212-736-5000")),
    _c("my card is 4111111111111111, cvv 123", ("card", "4111111111111111")),
    _c("iban: de89 3704 0044 0532 0130 00", ("iban", "de89 3704 0044 0532 0130 00")),  # lower case
    _c(
        "BE68539007547034 / IT60X0542811101000000123456",
        ("iban", "BE68539007547034"),
        ("iban", "IT60X0542811101000000123456"),
    ),
    _c("Social Security No. 078051120", ("us_ssn", "078051120")),
    _c("tax form lists 078051120"),  # nine bare digits without a keyword: ambiguous, not reported
    _c("connect to 10.1.2.3:8080", ("ipv4", "10.1.2.3")),
    _c("http://[2001:db8::2]:8443/health", ("ipv6", "2001:db8::2")),
    _c("GET /v1/x?api_key=AbC123dEf456GhI789jKl0 HTTP/1.1", ("secret", "AbC123dEf456GhI789jKl0")),
    _c("gitlab glpat-Xy7Zq2Wv9Rt4Lp8Mn3Kb", ("secret", "glpat-Xy7Zq2Wv9Rt4Lp8Mn3Kb")),  # vendor not listed
    _c("authorization: bearer abcDEF123456ghiJKL789mno", ("secret", "abcDEF123456ghiJKL789mno")),
    _c(
        "google key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        ("secret", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ),
    _c("build 20240501.3 finished in 10:30:45.123"),
    _c("invoice INV-2024-000123 total 4,111.11"),
    _c("flight LH400 seat 12A gate B22"),
    _c("patch 5.4.0-150-generic kernel"),
    _c("ticket #2125551234 resolved"),
    _c("the pi day 3.14.15.92 party"),
]
